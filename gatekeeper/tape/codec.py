"""Answers as JSON and back: the client's typed responses, raw GETs and endpoint errors.

What an endpoint method returned (or raised) becomes one JSON object `{"type": ..., ...}`; `decode`
rebuilds the same value, measured latencies included, so a gate judging a replayed answer sees
what it saw when the answer was first given.
"""

from __future__ import annotations

import base64
import dataclasses
from typing import Any

import httpx

from gatekeeper.errors import EndpointError, RequestFacts
from gatekeeper.json_types import JsonObject
from gatekeeper.endpoints.responses import ChatResponse, CompletionResponse, TokenLogprob, ToolCall


def encode(value: Any) -> JsonObject:
    """The JSON form of an endpoint method's result (or of the EndpointError it raised)."""
    if isinstance(value, EndpointError):
        return {"type": "error", "kind": value.kind, "url": value.url, "detail": value.detail, "status": value.status,
                "retries_done": value.retries_done,
                "facts": dataclasses.asdict(value.facts) if value.facts is not None else None}
    if isinstance(value, ChatResponse):
        return {"type": "chat", **dataclasses.asdict(value)}
    if isinstance(value, CompletionResponse):
        return {"type": "completion", **dataclasses.asdict(value)}
    if isinstance(value, httpx.Response):
        try:
            url = str(value.request.url)
        except RuntimeError:  # a response built without its request
            url = ""
        return {"type": "http", "status": value.status_code, "headers": list(value.headers.multi_items()), "url": url,
                "body": base64.b64encode(value.content).decode("ascii")}
    if isinstance(value, (dict, list)):
        return {"type": "json", "value": value}
    raise TypeError(f"cannot record a {type(value).__name__}")


def decode(data: dict[str, Any]) -> Any:
    """The value `encode` wrote: a response, an httpx.Response, JSON, or an EndpointError (returned,
    not raised: the caller raises it)."""
    kind = data["type"]
    fields = {k: v for k, v in data.items() if k != "type"}
    if kind == "error":
        error = EndpointError(fields["kind"], fields["url"], fields["detail"], fields["status"],
                              retries_done=bool(fields.get("retries_done")))
        facts = fields.get("facts")  # absent in recordings made before facts were kept
        if isinstance(facts, dict):
            error.facts = RequestFacts(**{**facts, "log": tuple(facts.get("log") or ())})
        return error
    if kind == "chat":
        fields["tool_calls"] = tuple(ToolCall(**t) for t in fields["tool_calls"])
        if fields["logprobs"] is not None:
            fields["logprobs"] = tuple(TokenLogprob(**t) for t in fields["logprobs"])
        fields["protocol_warnings"] = tuple(fields["protocol_warnings"])
        return ChatResponse(**fields)
    if kind == "completion":
        for name in ("tokens", "token_logprobs", "top_logprobs", "protocol_warnings"):
            fields[name] = tuple(fields[name])
        if fields["prompt_logprobs"] is not None:
            fields["prompt_logprobs"] = tuple(fields["prompt_logprobs"])
        return CompletionResponse(**fields)
    if kind == "http":
        return httpx.Response(fields["status"], headers=[tuple(h) for h in fields["headers"]],
                              content=base64.b64decode(fields["body"]), request=httpx.Request("GET", fields["url"] or "http://recorded/"))
    if kind == "json":
        return fields["value"]
    raise ValueError(f"unknown answer type {kind!r}")
