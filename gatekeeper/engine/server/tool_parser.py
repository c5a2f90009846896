"""Hermes-style tool calls: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` in model text.

One state machine serves both modes. Non-streaming output is the streaming parser fed the whole
text at once, so a stream and its non-streamed twin give the same content and the same calls by
construction, whatever the chunking. The rules (vLLM's Hermes parser, made chunking-invariant):

- text outside tool-call blocks is content, verbatim; after the first call, whitespace-only text
  (the newline between parallel calls) is dropped;
- a block whose body is a JSON object with a string `name` becomes a call; its `arguments` are
  re-serialised with `json.dumps(ensure_ascii=False)`; any other block stays content, tags included;
- a block still open when the text ends is parsed the same way (the model may stop before `</tool_call>`);
- a block ends at the first `</tool_call>` whose body so far is a well-formed call, so a tag
  written *inside* an argument string (grammar-constrained output may hold anything there) does
  not cut the call; when no `</tool_call>` gives a well-formed call, the first one ends the block
  (decided at the end of the text, so the stream holds such a block back until then).

A call is streamed when its block closes: one delta with id, type and the full name, then one
delta with the arguments. Waiting for the close costs a little latency but guarantees the deltas
concatenate to valid JSON and never name a call that later turns out to be malformed.

`FaultyStreamingToolParser` is the `tool-parser-partial` fault: a naive incremental streamer that
emits content without holding back partial tags and streams the raw text after `"arguments":`,
so the stream leaks `<tool_c`-style fragments and argument deltas that do not join into JSON.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field

START = "<tool_call>"
END = "</tool_call>"


def make_tool_call_id() -> str:
    """A fresh OpenAI-style tool-call id (more than 9 characters, as vLLM's tests require)."""
    return f"call_{uuid.uuid4().hex[:24]}"


@dataclass(frozen=True)
class ToolCall:
    """One parsed call: the function name and its arguments as a JSON string."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ContentDelta:
    """Plain assistant text."""

    text: str


@dataclass(frozen=True)
class ToolCallDelta:
    """A piece of the call at `index`: the first carries id and name, later ones argument text."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


Delta = ContentDelta | ToolCallDelta


def _partial_suffix(text: str, tag: str) -> int:
    """Length of the longest suffix of `text` that is a proper prefix of `tag`."""
    for n in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:n]):
            return n
    return 0


def parse_call(body: str) -> tuple[str, str] | None:
    """(name, arguments JSON) of a block body, or None when it is not a well-formed call."""
    try:
        obj = json.loads(body)
    except json.JSONDecodeError:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str) or not obj["name"]:
        return None
    args = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):  # some models write the arguments as a JSON string
        try:
            args = json.loads(args)
        except json.JSONDecodeError:
            return None
    if not isinstance(args, dict):
        return None
    return obj["name"], json.dumps(args, ensure_ascii=False)


@dataclass
class StreamingToolParser:
    """Splits model text, fed in arbitrary pieces, into content and tool-call deltas."""

    _buf: str = ""
    _in_call: bool = False
    _calls: list[ToolCall] = field(default_factory=list)

    @property
    def calls(self) -> list[ToolCall]:
        """The calls completed so far."""
        return list(self._calls)

    def feed(self, text: str) -> list[Delta]:
        """Deltas made final by `text`; text that may still become a tag is held back."""
        self._buf += text
        out: list[Delta] = []
        while True:
            if self._in_call:
                end = self._call_end(final=False)
                if end is None:
                    return out
                body, self._buf = self._buf[:end], self._buf[end + len(END):]
                self._in_call = False
                out += self._close_block(body, closed=True)
                continue
            start = self._buf.find(START)
            if start >= 0:
                out += self._content(self._buf[:start])
                self._buf = self._buf[start + len(START):]
                self._in_call = True
                continue
            keep = _partial_suffix(self._buf, START)
            ready, self._buf = self._buf[: len(self._buf) - keep], self._buf[len(self._buf) - keep:]
            if self._calls and not ready.strip():
                # whitespace after a call is dropped only if a call or the end follows; hold it
                self._buf = ready + self._buf
                return out
            out += self._content(ready)
            return out

    def finish(self) -> list[Delta]:
        """Flush at end of text: an open block is parsed as is; held-back text becomes content."""
        out: list[Delta] = []
        while self._in_call:
            end = self._call_end(final=True)
            self._in_call = False
            if end is None:
                rest, self._buf = self._buf, ""
                return out + self._close_block(rest, closed=False)
            body, self._buf = self._buf[:end], self._buf[end + len(END):]
            out += self._close_block(body, closed=True) + self.feed("")
        rest, self._buf = self._buf, ""
        if self._calls and not rest.strip():
            return out
        return out + self._content(rest)

    def _call_end(self, final: bool) -> int | None:
        """Where the open block's body ends: the first end tag after a well-formed call; at the
        end of the text (`final`), else the first end tag; None while undecided or absent."""
        ends, at = [], self._buf.find(END)
        while at >= 0:
            if parse_call(self._buf[:at]) is not None:
                return at
            ends.append(at)
            at = self._buf.find(END, at + 1)
        return ends[0] if final and ends else None

    def _content(self, text: str) -> list[Delta]:
        if not text or (self._calls and not text.strip()):
            return []
        return [ContentDelta(text)]

    def _close_block(self, body: str, closed: bool) -> list[Delta]:
        parsed = parse_call(body)
        if parsed is None:
            return [ContentDelta(START + body + (END if closed else ""))]
        name, arguments = parsed
        call = ToolCall(make_tool_call_id(), name, arguments)
        index = len(self._calls)
        self._calls.append(call)
        return [ToolCallDelta(index, id=call.id, name=name), ToolCallDelta(index, arguments=arguments)]


def parse_tool_calls(text: str) -> tuple[str | None, list[ToolCall]]:
    """Non-streaming parse: (content or None, calls), identical to streaming the same text."""
    parser = StreamingToolParser()
    deltas = parser.feed(text) + parser.finish()
    content = "".join(d.text for d in deltas if isinstance(d, ContentDelta))
    return (content or None), parser.calls


_ARGS_KEY = re.compile(r'"(?:arguments|parameters)"\s*:\s*')
_NAME = re.compile(r'"name"\s*:\s*"([^"]+)"')


@dataclass
class FaultyStreamingToolParser:
    """The `tool-parser-partial` fault: the naive incremental streamer described above."""

    _text: str = ""
    _sent: int = 0  # characters of `_text` already emitted as content
    _in_call: bool = False
    _call_start: int = 0
    _args_sent: int = 0  # characters of the current block's arguments already emitted
    _named: bool = False
    _index: int = -1
    _calls: list[ToolCall] = field(default_factory=list)

    @property
    def calls(self) -> list[ToolCall]:
        return list(self._calls)

    def feed(self, text: str) -> list[Delta]:
        self._text += text
        out: list[Delta] = []
        while True:
            if not self._in_call:
                # the bug: content goes out eagerly, so a tag split across pieces leaks its head
                start = self._text.find(START, max(0, self._sent - len(START)))
                if start < 0:
                    if self._sent < len(self._text):
                        out.append(ContentDelta(self._text[self._sent:]))
                        self._sent = len(self._text)
                    return out
                if start > self._sent:
                    out.append(ContentDelta(self._text[self._sent:start]))
                self._in_call, self._call_start = True, start + len(START)
                self._named, self._args_sent = False, 0
                self._sent = self._call_start
            block = self._text[self._call_start:]
            end = block.find(END)
            body = block if end < 0 else block[:end]
            if not self._named:
                m = _NAME.search(body)
                if m is None:
                    return out
                self._index += 1
                self._named = True
                call_id = make_tool_call_id()
                self._calls.append(ToolCall(call_id, m.group(1), ""))
                out.append(ToolCallDelta(self._index, id=call_id, name=m.group(1)))
            m = _ARGS_KEY.search(body)
            if m is not None:
                # the bug: the raw tail is streamed, outer closing brace and any partial end tag included
                raw = body[m.end():]
                if len(raw) > self._args_sent:
                    out.append(ToolCallDelta(self._index, arguments=raw[self._args_sent:]))
                    self._args_sent = len(raw)
            if end < 0:
                return out
            self._in_call = False
            self._sent = self._call_start + end + len(END)

    def finish(self) -> list[Delta]:
        return []


def make_streaming_parser(faulty: bool) -> StreamingToolParser | FaultyStreamingToolParser:
    """The streaming parser; the faulty one when the `tool-parser-partial` fault is on."""
    return FaultyStreamingToolParser() if faulty else StreamingToolParser()
