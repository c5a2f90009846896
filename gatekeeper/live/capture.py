"""One proxied exchange, captured: the client's request and the upstream's answer as bytes, with
timings; and what it becomes — a traffic record (docs/traffic-format.md) and the `Answer` gate 5
measures.

Only `POST /v1/chat/completions` and `POST /v1/completions` with a JSON body become records;
everything else passes through unrecorded. A streamed answer is kept as the SSE bytes it was
and assembled, for the record, into the non-streamed response object it stands for.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from gatekeeper.json_types import JsonObject
from gatekeeper.errors import EndpointError
from gatekeeper.traffic.answers import Answer, answer_of
from gatekeeper.traffic.format import ENDPOINTS, TrafficLineError, TrafficRecord, parse_record
from gatekeeper.endpoints.wire import assemble_chat_stream, parse_chat, parse_completion, sse_events

PATHS = {path: name for name, path in ENDPOINTS.items()}


@dataclass
class Exchange:
    """A request as the client sent it and the answer as the upstream sent it back."""

    method: str
    path: str
    headers: dict[str, str]  # the request's headers, lower-cased names (never written to disk)
    body: bytes
    started: float = field(default_factory=time.time)  # wall clock, for the record's timestamp
    status: int = 0
    content_type: str = ""
    answer: bytes = b""
    truncated: bool = False  # the answer was longer than the capture limit
    ttft_s: float | None = None
    e2e_s: float = 0.0
    error: str | None = None  # the upstream failed (connection, timeout)

    @property
    def endpoint(self) -> str | None:
        """"chat" or "completions" for a request that can become a record, else None."""
        return PATHS.get(self.path.split("?")[0].rstrip("/")) if self.method == "POST" else None

    def request_json(self) -> dict[str, Any] | None:
        """The request body as JSON, or None when it is not a JSON object."""
        try:
            obj = json.loads(self.body)
        except ValueError:
            return None
        return obj if isinstance(obj, dict) else None


def _events(data: bytes, url: str) -> Iterator[dict[str, Any] | str]:
    """The SSE events of a captured stream (`wire.sse_events`: a malformed event is an EndpointError)."""
    return sse_events((raw.rstrip(b"\r").decode("utf-8", "replace") for raw in data.split(b"\n")), url)


def _completion_stream(data: bytes, url: str) -> dict[str, Any]:
    text, finish, usage, model = [], None, None, None
    for event in _events(data, url):
        if not isinstance(event, dict):
            break
        model = model or event.get("model")
        usage = event.get("usage") or usage
        for choice in event.get("choices") or []:
            text.append(choice.get("text") or "")
            finish = choice.get("finish_reason") or finish
    return {"object": "text_completion", "model": model, "usage": usage,
            "choices": [{"index": 0, "text": "".join(text), "finish_reason": finish}]}


def response_object(ex: Exchange) -> dict[str, Any] | None:
    """The answer as an OpenAI response object (a stream assembled), or None when it is none."""
    if ex.status != 200 or ex.truncated:
        return None
    if "text/event-stream" not in ex.content_type:
        try:
            obj = json.loads(ex.answer)
        except ValueError:
            return None
        return obj if isinstance(obj, dict) else None
    try:
        if ex.endpoint == "completions":
            return _completion_stream(ex.answer, ex.path)
        chat = assemble_chat_stream(ex.path, _events(ex.answer, ex.path), time.perf_counter())
    except EndpointError:
        return None
    message: dict[str, Any] = {"role": "assistant", "content": chat.text}
    if chat.tool_calls:
        message["tool_calls"] = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                                 for c in chat.tool_calls]
    usage = None if chat.completion_tokens is None else {"prompt_tokens": chat.prompt_tokens,
                                                          "completion_tokens": chat.completion_tokens}
    return {"object": "chat.completion", "model": chat.model, "usage": usage,
            "choices": [{"index": 0, "message": message, "finish_reason": chat.finish_reason}]}


def answer_of_exchange(ex: Exchange) -> Answer:
    """The upstream's answer as gate 5 measures it (a failed or unparseable one has `error`)."""
    if ex.error is not None:
        return Answer(error=ex.error[:300], e2e_s=ex.e2e_s)
    if ex.status != 200:
        return Answer(error=f"http: status {ex.status}: {ex.answer[:200].decode('utf-8', 'replace')}", e2e_s=ex.e2e_s)
    if ex.truncated:
        return Answer(error="malformed: the answer was longer than the capture limit", e2e_s=ex.e2e_s)
    try:
        if "text/event-stream" in ex.content_type:
            if ex.endpoint == "chat":
                resp: Any = assemble_chat_stream(ex.path, _events(ex.answer, ex.path), time.perf_counter())
                return _timed(answer_of(resp), ex)
            return _timed(answer_of(parse_completion(ex.path, _completion_stream(ex.answer, ex.path), ex.e2e_s)), ex)
        obj = json.loads(ex.answer)
        if not isinstance(obj, dict):
            raise ValueError("not an object")
        parse = parse_chat if ex.endpoint == "chat" else parse_completion
        return _timed(answer_of(parse(ex.path, obj, ex.e2e_s)), ex)
    except (EndpointError, ValueError, KeyError, TypeError) as e:
        return Answer(error=f"malformed: {e}"[:300], e2e_s=ex.e2e_s)


def _timed(a: Answer, ex: Exchange) -> Answer:
    """The answer with the proxy's own timings (what the client saw)."""
    return replace(a, e2e_s=ex.e2e_s, ttft_s=ex.ttft_s if ex.ttft_s is not None else a.ttft_s)


def to_record(ex: Exchange, tenant_header: str | None, redact: Any = None, with_response: bool = True,
              session_header: str | None = None) -> TrafficRecord | None:
    """The exchange as a traffic record (its request redacted by `redact.value` when given; the
    session header's value as the tag `session:<id>`), or None when it is not a recordable
    request or its body is not a valid one."""
    endpoint = ex.endpoint
    req = ex.request_json() if endpoint else None
    if endpoint is None or req is None:
        return None
    tenant = ex.headers.get(tenant_header.lower(), "") if tenant_header else ""
    response = response_object(ex) if with_response else None
    if redact is not None:
        req, response = redact.value(req), redact.value(response) if response is not None else None
        tenant = redact.text(tenant)
    obj: JsonObject = {"endpoint": endpoint, "request": req, "id": uuid.uuid4().hex,
                           "tenant": tenant or "default", "timestamp": round(ex.started, 3)}
    if isinstance(req.get("model"), str):
        obj["model_alias"] = req["model"]
    if response is not None:
        obj["response"] = response
    session = ex.headers.get(session_header.lower()) if session_header else None
    if session:
        obj["tags"] = [f"session:{redact.text(session) if redact is not None else session}"]
    try:
        return parse_record(obj, 0)
    except TrafficLineError:
        return None  # n > 1, an empty message list...: not a request gate 5 can compare
