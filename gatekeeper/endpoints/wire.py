"""Parsing OpenAI-shaped answers (chat, streamed chat, completions) into typed responses.

The endpoint client (`client.py`) hands decoded JSON here. Any shape the parsers do not expect —
a field of the wrong type, a missing message, logprobs that are not numbers — is an EndpointError
of kind `malformed` (`shaped` catches the rest), never an assert or a crash in a gate. Tolerated
deviations (logprobs in the other API's shape, a stream without `data: [DONE]`) are returned as
the response's `protocol_warnings`.
"""

from __future__ import annotations

import json
import time
from typing import Any, Callable, Iterable, Iterator, TypeVar

from gatekeeper.errors import EndpointError
from gatekeeper.endpoints.responses import ChatResponse, CompletionResponse, TokenLogprob, ToolCall

_decode = json.JSONDecoder().decode  # on str: json.loads' type checks and encoding sniffing cost ~40% more per event

T = TypeVar("T")
_MALFORMED = (TypeError, AttributeError, KeyError, IndexError, ValueError)  # a shape the parsers did not expect


def _field(url: str, value: Any, types: type | tuple[type, ...], what: str) -> Any:
    """`value` when it is None or of `types`; else a `malformed` EndpointError naming the field."""
    if value is None or isinstance(value, types):
        return value
    raise EndpointError("malformed", url, f"{what} is {type(value).__name__}, not {_type_names(types)}")


def _type_names(types: type | tuple[type, ...]) -> str:
    return " or ".join(t.__name__ for t in (types if isinstance(types, tuple) else (types,)))


def shaped(url: str, parse: Callable[[], T]) -> T:
    """parse(), with any shape the parser did not expect classified `malformed`."""
    try:
        return parse()
    except _MALFORMED as e:
        raise EndpointError("malformed", url, f"unexpected response shape ({type(e).__name__}: {e})"[:300]) from None


def _choice(url: str, data: dict[str, Any]) -> dict[str, Any]:
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise EndpointError("malformed", url, "response has no choices")
    return choices[0]


def _usage(data: dict[str, Any], url: str = "") -> tuple[int | None, int | None]:
    u = _field(url, data.get("usage"), dict, "usage") or {}
    return (_field(url, u.get("prompt_tokens"), int, "usage.prompt_tokens"),
            _field(url, u.get("completion_tokens"), int, "usage.completion_tokens"))


def _chat_logprobs(lp: Any, warnings: list[str]) -> tuple[TokenLogprob, ...] | None:
    if lp is None:
        return None
    if isinstance(lp, dict) and isinstance(lp.get("content"), list):
        out = []
        for item in lp["content"]:
            top = {str(t.get("token", "")): v for t in item.get("top_logprobs") or []
                   if (v := _num(t.get("logprob"))) is not None}  # a top-k entry without a logprob says nothing
            out.append(TokenLogprob(str(item.get("token", "")), _num(item.get("logprob")), top))
        return tuple(out)
    if isinstance(lp, dict) and "token_logprobs" in lp:
        warnings.append("chat logprobs came in the completions shape (tokens/token_logprobs)")
        tops = lp.get("top_logprobs") or [None] * len(lp["tokens"])
        return tuple(TokenLogprob(t, x, dict(tp or {})) for t, x, tp in zip(lp["tokens"], lp["token_logprobs"], tops))
    warnings.append("chat logprobs in an unknown shape were ignored")
    return None


def _num(x: Any) -> float | None:
    """A logprob: a number or None (a string or a bool is a malformed answer: TypeError)."""
    if x is None or (isinstance(x, (int, float)) and not isinstance(x, bool)):
        return x
    raise TypeError(f"logprob {x!r} is not a number")


def _tool_calls(raw: Any, url: str) -> tuple[ToolCall, ...]:
    calls = []
    for tc in raw or []:
        fn = (tc or {}).get("function") or {}
        if not isinstance(fn.get("name"), str):
            raise EndpointError("malformed", url, "tool call without a function name")
        args = fn.get("arguments")
        calls.append(ToolCall(fn["name"], args if isinstance(args, str) else json.dumps(args), tc.get("id")))
    return tuple(calls)


def parse_chat(url: str, data: dict[str, Any], e2e: float) -> ChatResponse:
    choice = _choice(url, data)
    msg = choice.get("message")
    if not isinstance(msg, dict):
        raise EndpointError("malformed", url, "choice has no message")
    warnings: list[str] = []
    pt, ct = _usage(data, url)
    return ChatResponse(
        text=_field(url, msg.get("content"), str, "message.content") or "",
        tool_calls=_tool_calls(_field(url, msg.get("tool_calls"), list, "message.tool_calls"), url),
        finish_reason=_field(url, choice.get("finish_reason"), str, "finish_reason"),
        model=_field(url, data.get("model"), str, "model"),
        prompt_tokens=pt,
        completion_tokens=ct,
        logprobs=_chat_logprobs(choice.get("logprobs"), warnings),
        e2e_s=e2e,
        protocol_warnings=tuple(warnings),
        raw=data,
    )


def sse_events(lines: Iterable[str], url: str) -> Iterator[dict[str, Any] | str]:
    """The decoded `data:` events of an SSE stream's lines; the string "[DONE]" for the
    terminator (and nothing after it). A payload that is not a JSON object is `malformed`; an
    error object in place of a chunk is an `http` error. The one SSE parser: the client's
    streams and the load generator's both go through it."""
    for line in lines:
        if not line.startswith("data:"):
            continue  # blank lines, comments (keep-alives), event:/id: fields
        payload = line[5:].strip()
        if payload == "[DONE]":
            yield "[DONE]"
            return
        try:
            event = _decode(payload)
        except ValueError:
            raise EndpointError("malformed", url, f"SSE event is not JSON: {payload[:120]!r}") from None
        if not isinstance(event, dict):
            raise EndpointError("malformed", url, f"SSE event is not a JSON object: {payload[:120]!r}")
        if "error" in event and "choices" not in event:
            raise EndpointError("http", url, f"error event in stream: {str(event['error'])[:300]}")
        yield event


def _partial(text: str, calls: dict[int, dict[str, Any]]) -> str:
    """What a broken stream had delivered: its text, then any tool calls begun (name and arguments so far)."""
    begun = [f"{c['name'] or '?'}({c['arguments']}" for _, c in sorted(calls.items())]
    return text + ("".join(f" [tool call {b}…]" for b in begun) if begun else "")


def assemble_chat_stream(url: str, events: Iterator[dict[str, Any] | str], t0: float) -> ChatResponse:
    text: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    finish = None
    pt = ct = None
    ttft = None
    logprobs: list[TokenLogprob] = []
    saw_logprobs = False
    done = False
    warnings: list[str] = []
    model = None
    try:
        for event in events:
            if event == "[DONE]":
                done = True
                break
            if not isinstance(event, dict):  # _stream yields objects only; a caller's iterator may not
                raise EndpointError("malformed", url, "SSE event is not a JSON object")
            model = model or _field(url, event.get("model"), str, "model")
            if event.get("usage"):
                pt, ct = _usage(event, url)
            for choice in _field(url, event.get("choices"), list, "choices") or []:
                delta = _field(url, choice.get("delta"), dict, "choices[].delta") or {}
                content = _field(url, delta.get("content"), str, "delta.content")
                if ttft is None and (content or delta.get("tool_calls")):
                    ttft = time.perf_counter() - t0
                if content:
                    text.append(content)
                for tc in delta.get("tool_calls") or []:
                    slot = calls.setdefault(tc.get("index", 0), {"id": None, "name": "", "arguments": ""})
                    slot["id"] = slot["id"] or tc.get("id")
                    fn = tc.get("function") or {}
                    slot["name"] += fn.get("name") or ""
                    slot["arguments"] += fn.get("arguments") or ""
                if choice.get("logprobs") is not None:
                    saw_logprobs = True
                    logprobs.extend(_chat_logprobs(choice["logprobs"], warnings) or ())
                if choice.get("finish_reason"):
                    finish = _field(url, choice["finish_reason"], str, "finish_reason")
        if not done and finish is None:
            raise EndpointError("stream", url, "stream ended before any finish_reason and without data: [DONE]")
    except EndpointError as e:  # the stream broke: keep what had arrived, for the failed request's evidence
        e.partial = _partial("".join(text), calls)
        raise
    if not done:
        warnings.append("stream ended without data: [DONE]")
    tool_calls = tuple(ToolCall(c["name"], c["arguments"], c["id"]) for _, c in sorted(calls.items()))
    return ChatResponse(
        text="".join(text),
        tool_calls=tool_calls,
        finish_reason=finish,
        prompt_tokens=pt,
        completion_tokens=ct,
        logprobs=tuple(logprobs) if saw_logprobs else None,
        e2e_s=time.perf_counter() - t0,
        ttft_s=ttft,
        streamed=True,
        model=model,
        protocol_warnings=tuple(dict.fromkeys(warnings)),
    )


def parse_completion(url: str, data: dict[str, Any], e2e: float) -> CompletionResponse:
    choice = _choice(url, data)
    warnings: list[str] = []
    lp = choice.get("logprobs")
    tokens: tuple[str, ...] = ()
    token_lps: tuple[float | None, ...] = ()
    tops: tuple[dict[str, float] | None, ...] = ()
    if isinstance(lp, dict) and "tokens" in lp:
        tokens = tuple(lp.get("tokens") or ())
        token_lps = tuple(lp.get("token_logprobs") or ())
        tops = tuple(lp.get("top_logprobs") or (None,) * len(tokens))
    elif isinstance(lp, dict) and isinstance(lp.get("content"), list):
        warnings.append("completions logprobs came in the chat shape (content[])")
        items = lp["content"]
        tokens = tuple(i.get("token", "") for i in items)
        token_lps = tuple(i.get("logprob") for i in items)
        tops = tuple({t.get("token", ""): t.get("logprob") for t in i.get("top_logprobs") or []} for i in items)
    pt, ct = _usage(data, url)
    plp = choice.get("prompt_logprobs", data.get("prompt_logprobs"))
    return CompletionResponse(
        text=_field(url, choice.get("text"), str, "choices[].text") or "",
        finish_reason=_field(url, choice.get("finish_reason"), str, "finish_reason"),
        model=_field(url, data.get("model"), str, "model"),
        tokens=tokens,
        token_logprobs=token_lps,
        top_logprobs=tops,
        prompt_logprobs=tuple(plp) if isinstance(plp, list) else None,
        prompt_tokens=pt,
        completion_tokens=ct,
        e2e_s=e2e,
        protocol_warnings=tuple(warnings),
        raw=data,
    )
