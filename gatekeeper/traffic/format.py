"""The traffic format, version 1 (docs/traffic-format.md): one JSON object per line.

    {"endpoint": "chat", "request": {"messages": [...], "max_tokens": 64, "tools": [...]},
     "id": "req-17", "tenant": "acme", "model_alias": "chat-small", "timestamp": 1733050000.5,
     "tags": ["beta"], "response": {...the recorded OpenAI response...}, "expected": "...", "format": 1}

`endpoint` and `request` are required; `request` is the OpenAI request body as the client sent
it (`model` is replaced by the target's served model at replay). `expected`, where given, is the
exact answer the request should get (gate 5 counts an answer that is not it as a failed task).
Blank lines and lines starting with `#` are ignored. A bad line is one `file:line: problem`; the
policy says whether it aborts the load or is skipped and counted. Bad lines include `NaN` and
`Infinity` (not JSON, though Python writes them), a timestamp that is not a finite time, and an
id an earlier line used (a line without an id is `line-<n>`). A file without a single request is
an error too: a check or a replay of nothing would pass having judged nothing.
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gatekeeper.json_types import JsonObject
from gatekeeper.errors import ConfigError

FORMAT_VERSION = 1
ENDPOINTS = {"chat": "/v1/chat/completions", "completions": "/v1/completions"}
_KEYS = ("endpoint", "request", "id", "tenant", "model_alias", "timestamp", "tags", "response", "pair", "expected",
         "format")
_ROLES = ("system", "user", "assistant", "tool", "developer", "function")


class TrafficLineError(ValueError):
    """One line of a traffic file is not a valid record (the message says why)."""


@dataclass(frozen=True, kw_only=True)
class TrafficRecord:
    """One recorded request. `kind` is derived from the request: "tool" (it offers tools),
    "json" (it asks for a JSON response_format), "long_chat" (six or more messages),
    "chat" or "completion". `expected`: the exact answer the request should get (None: not known)."""

    line: int
    id: str
    endpoint: str
    request: dict[str, Any] = field(hash=False)
    tenant: str = "default"
    model_alias: str = ""
    timestamp: float | None = None
    tags: tuple[str, ...] = ()
    response: dict[str, Any] | None = field(default=None, hash=False)
    pair: dict[str, Any] | None = field(default=None, hash=False)  # a pair store's answers (export/import)
    expected: str | None = None

    @property
    def kind(self) -> str:
        """The request kind slices are cut by."""
        req = self.request
        if req.get("tools"):
            return "tool"
        fmt = req.get("response_format")
        if isinstance(fmt, dict) and fmt.get("type") in ("json_object", "json_schema"):
            return "json"
        if self.endpoint == "completions":
            return "completion"
        return "long_chat" if len(req.get("messages", [])) >= 6 else "chat"

    @property
    def sampled(self) -> bool:
        """Whether the request samples (temperature above 0; absent means 1, as in the OpenAI API)."""
        t = self.request.get("temperature", 1.0)
        return not isinstance(t, (int, float)) or t > 0

    def to_json(self) -> JsonObject:
        """The record as a traffic-file line (the inverse of `parse_record`)."""
        out: JsonObject = {"format": FORMAT_VERSION, "id": self.id, "endpoint": self.endpoint,
                               "request": self.request, "tenant": self.tenant}
        if self.model_alias:
            out["model_alias"] = self.model_alias
        if self.timestamp is not None:
            out["timestamp"] = self.timestamp
        if self.tags:
            out["tags"] = list(self.tags)
        if self.response is not None:
            out["response"] = self.response
        if self.pair is not None:
            out["pair"] = self.pair
        if self.expected is not None:
            out["expected"] = self.expected
        return out


@dataclass(frozen=True)
class TrafficFile:
    """A loaded traffic file: its records and the lines skipped as bad (`file:line: problem`)."""

    path: str
    records: tuple[TrafficRecord, ...]
    skipped: tuple[str, ...] = ()


def _timestamp(value: Any) -> float:
    if isinstance(value, bool):
        raise TrafficLineError("timestamp must be seconds since the epoch or an ISO 8601 string")
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise TrafficLineError(f"timestamp {value} is not a time")
        return float(value)
    if isinstance(value, str):
        try:
            parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise TrafficLineError(f"timestamp {value!r} is not ISO 8601") from None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=dt.timezone.utc)
        return parsed.timestamp()
    raise TrafficLineError("timestamp must be seconds since the epoch or an ISO 8601 string")


def _check_request(endpoint: str, req: dict[str, Any]) -> None:
    if endpoint == "chat":
        messages = req.get("messages")
        if not isinstance(messages, list) or not messages:
            raise TrafficLineError("request.messages must be a non-empty list (a chat request)")
        for i, m in enumerate(messages):
            if not isinstance(m, dict) or m.get("role") not in _ROLES:
                raise TrafficLineError(f"request.messages[{i}] must be an object with a role ({', '.join(_ROLES[:4])}...)")
    else:
        prompt = req.get("prompt")
        if not isinstance(prompt, str):
            raise TrafficLineError("request.prompt must be a string (a completions request; token-id prompts are "
                                   "not replayed)")
    for key, kind in (("stream", bool), ("max_tokens", int), ("tools", list), ("n", int)):
        if key in req and (not isinstance(req[key], kind) or isinstance(req[key], bool) is not (kind is bool)):
            raise TrafficLineError(f"request.{key} must be {kind.__name__ if kind is not list else 'a list'}")
    if "temperature" in req and (isinstance(req["temperature"], bool) or not isinstance(req["temperature"], (int, float))):
        raise TrafficLineError("request.temperature must be a number")
    if req.get("n", 1) != 1:
        raise TrafficLineError("request.n must be 1 (one answer per request is compared)")


def parse_record(obj: Any, line: int) -> TrafficRecord:
    """One decoded line as a record; TrafficLineError naming the problem."""
    if not isinstance(obj, dict):
        raise TrafficLineError("a line must be a JSON object")
    for key in obj:
        if key not in _KEYS:
            near = difflib.get_close_matches(str(key), _KEYS, n=1)
            raise TrafficLineError(f"unknown key {key!r}" + (f" (did you mean {near[0]!r}?)" if near else ""))
    if obj.get("format", FORMAT_VERSION) != FORMAT_VERSION:
        raise TrafficLineError(f"format {obj['format']!r}: this gatekeeper reads traffic format {FORMAT_VERSION}")
    endpoint = obj.get("endpoint")
    if endpoint not in ENDPOINTS:
        raise TrafficLineError(f"endpoint must be one of {', '.join(ENDPOINTS)} (got {endpoint!r})")
    req = obj.get("request")
    if not isinstance(req, dict):
        raise TrafficLineError("request must be an object (the OpenAI request body)")
    _check_request(endpoint, req)
    for key in ("id", "tenant", "model_alias"):
        if key in obj and not isinstance(obj[key], str):
            raise TrafficLineError(f"{key} must be a string")
    tags = obj.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise TrafficLineError("tags must be a list of strings")
    response = obj.get("response")
    if response is not None and not isinstance(response, dict):
        raise TrafficLineError("response must be an object (the recorded OpenAI response) or absent")
    pair = obj.get("pair")
    if pair is not None and not (isinstance(pair, dict) and isinstance(pair.get("reference"), dict)
                                 and isinstance(pair.get("candidate"), dict)):
        raise TrafficLineError("pair must be an object with `reference` and `candidate` answers (a pair store's export)")
    expected = obj.get("expected")
    if expected is not None and (not isinstance(expected, str) or not expected.strip()):
        raise TrafficLineError("expected must be the exact answer, a non-empty string (or absent)")
    return TrafficRecord(line=line, id=obj.get("id") or f"line-{line}", endpoint=endpoint, request=req,
                         tenant=obj.get("tenant") or "default", model_alias=obj.get("model_alias", ""),
                         timestamp=_timestamp(obj["timestamp"]) if "timestamp" in obj else None, tags=tuple(tags), response=response,
                         pair=pair, expected=expected)


def _not_json(constant: str) -> Any:
    raise TrafficLineError(f"not JSON: {constant} is not a JSON number")


def iter_records(path: str | Path, skip_bad: bool = False, skipped: list[str] | None = None) -> Iterator[TrafficRecord]:
    """The records of a traffic file, streamed (a file of any size is never held whole; its ids
    are). A bad line raises ConfigError `file:line: problem`, or with `skip_bad` is appended to
    `skipped` and passed over; a file without a request raises ConfigError at its end."""
    try:
        handle = open(path, "rb")  # decoded line by line: a line that is not UTF-8 is that line's error
    except OSError as e:
        raise ConfigError(f"cannot read traffic file: {e.strerror or e}", str(path)) from None
    seen: dict[str, int] = {}  # id -> the line that used it first
    with handle:
        for n, raw in enumerate(handle, 1):
            try:
                try:
                    text = raw.decode("utf-8").strip()
                except UnicodeDecodeError as e:
                    raise TrafficLineError(f"not UTF-8 (byte {e.start + 1} of the line)") from None
                if not text or text.startswith("#"):
                    continue
                try:
                    obj = json.loads(text, parse_constant=_not_json)
                except TrafficLineError:
                    raise
                except ValueError as e:
                    raise TrafficLineError(f"not JSON: {e.args[0].split(':')[0]}") from None
                except RecursionError:
                    raise TrafficLineError("JSON nested too deeply") from None
                record = parse_record(obj, n)
                if record.id in seen:
                    raise TrafficLineError(f"id {record.id!r} is already used on line {seen[record.id]} (ids are unique)")
                seen[record.id] = n
                yield record
            except TrafficLineError as e:
                if not skip_bad:
                    raise ConfigError(str(e), str(path), n) from None
                if skipped is not None:
                    skipped.append(f"{path}:{n}: {e}")
    if not seen:
        raise ConfigError("no valid request in the traffic file" + (f" ({len(skipped)} bad lines)" if skipped else ""),
                          str(path))


def load_traffic(path: str | Path, skip_bad: bool = False) -> TrafficFile:
    """A whole traffic file (for replay, which samples from it); see `iter_records`."""
    skipped: list[str] = []
    records = tuple(iter_records(path, skip_bad, skipped))
    return TrafficFile(str(path), records, tuple(skipped))


def write_traffic(path: str | Path, records: Iterator[TrafficRecord] | list[TrafficRecord]) -> int:
    """Write records atomically (a temporary file renamed into place); the number written."""
    target = Path(path)
    tmp = target.with_name(target.name + ".tmp")
    n = 0
    with open(tmp, "w", encoding="utf-8") as out:
        for r in records:
            out.write(json.dumps(r.to_json(), ensure_ascii=False, sort_keys=True) + "\n")
            n += 1
    tmp.replace(target)
    return n
