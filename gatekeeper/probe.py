"""Probing what an endpoint supports, with one small request per feature.

Real servers differ: some silently ignore `logprobs`, cap `top_logprobs` low, have no echo or
prompt logprobs, no /tokenize, no tool parser, or end streams without `data: [DONE]`. Each probe
sends one small request and records what came back in a frozen `Capabilities`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from gatekeeper.capabilities import FEATURES, Capabilities
from gatekeeper.client import Endpoint
from gatekeeper.errors import EndpointError

PROBE_MESSAGES = [{"role": "user", "content": "Reply with exactly: OK"}]
PROBE_TOOL = {
    "type": "function",
    "function": {"name": "ping", "description": "Check the service.", "parameters": {"type": "object", "properties": {}}},
}


# Words a 400/422 answer names when it refuses a parameter the probe sent for the feature.
_FEATURE_WORDS = {
    "completions": ("completion",), "logprobs": ("logprob",), "top_logprobs_20": ("logprob",), "tools": ("tool",),
    "streaming": ("stream",), "echo": ("echo", "logprob"), "prompt_logprobs": ("prompt_logprobs", "logprob"),
    "tokenize": ("tokeniz",),
}
_REFUSAL_WORDS = ("not supported", "unsupported", "not implemented", "not available", "unknown", "unrecognized",
                  "not allowed", "extra inputs", "extra fields", "not permitted", "invalid", "must be", "exceed",
                  "maximum", "at most", "less than", "unexpected", "unrecognised", "not recognized",
                  "does not support", "ignored")


def is_missing_capability(feature: str, e: EndpointError) -> bool:
    """Whether a probe's failure says "this endpoint does not do that": 404/405/501, or a 400/422
    whose message refuses a parameter the feature's request sent (`logprobs`, `tools`, `echo`...).
    Any other 4xx (a bad request the probe did not expect, a refused key, a rate limit) is an
    error, shown as such, not a missing feature."""
    if e.kind == "unsupported":
        return True
    if e.kind != "http" or e.status not in (400, 422):
        return False
    text = e.detail.lower()
    return any(w in text for w in _FEATURE_WORDS.get(feature, ())) and any(w in text for w in _REFUSAL_WORDS)


def probe(ep: Endpoint) -> Capabilities:
    """Probe one endpoint: one small request per feature; an endpoint that is already failing
    is not asked again (a dead server costs one timeout, not one per feature)."""
    on: dict[str, bool] = {}
    notes: dict[str, str] = {}
    errors: dict[str, str] = {}
    warnings: list[str] = []

    def attempt(name: str, fn: Callable[[], Any]) -> Any:
        if errors:
            notes[name] = "not probed: an earlier probe request failed"
            return None
        try:
            return fn()
        except EndpointError as e:
            notes[name] = f"{e.kind}: {e.detail}"[:200]
            if not is_missing_capability(name, e):
                errors[name] = str(e)[:300]
            return None

    chat = attempt("chat", lambda: ep.chat(PROBE_MESSAGES, max_tokens=4))
    if chat is not None:
        on["chat"] = True
        warnings += chat.protocol_warnings
    if attempt("completions", lambda: ep.completion("Hello", max_tokens=1)) is not None:
        on["completions"] = True

    top_max = 0
    if on.get("chat"):
        lp = attempt("logprobs", lambda: ep.chat(PROBE_MESSAGES, max_tokens=2, logprobs=True, top_logprobs=5))
        if lp is not None:
            on["logprobs"] = bool(lp.logprobs) and all(t.logprob is not None for t in lp.logprobs)
            if not on["logprobs"]:
                notes["logprobs"] = "logprobs were requested but the response has none (silently ignored)"
            warnings += lp.protocol_warnings
        top = attempt("top_logprobs_20", lambda: ep.chat(PROBE_MESSAGES, max_tokens=1, logprobs=True, top_logprobs=20))
        notes.pop("top_logprobs_20", None)
        top_max = 20 if top is not None and top.logprobs and len(top.logprobs[0].top) >= 20 else (5 if on.get("logprobs") else 0)
        if attempt("tools", lambda: ep.chat(PROBE_MESSAGES, max_tokens=4, tools=[PROBE_TOOL], tool_choice="auto")) is not None:
            on["tools"] = True
        stream = attempt("streaming", lambda: ep.chat(PROBE_MESSAGES, max_tokens=4, stream=True))
        if stream is not None:
            on["streaming"] = True
            warnings += stream.protocol_warnings

    if on.get("completions"):
        echo = attempt("echo", lambda: ep.completion("Hello there", max_tokens=1, echo=True, logprobs=1))
        if echo is not None:
            on["echo"] = echo.text.startswith("Hello there") and len(echo.tokens) >= 2 and any(
                v is not None for v in echo.token_logprobs[1:])
            if not on["echo"]:
                notes["echo"] = "echo with logprobs did not return the prompt's tokens and logprobs"
            warnings += echo.protocol_warnings
        plp = attempt("prompt_logprobs", lambda: ep.completion("Hello there", max_tokens=1, prompt_logprobs=1))
        if plp is not None:
            on["prompt_logprobs"] = bool(plp.prompt_logprobs)
            if not on["prompt_logprobs"]:
                notes["prompt_logprobs"] = "prompt_logprobs requested but not returned"

    tok = attempt("tokenize", lambda: ep.tokenize("Hello there"))
    if tok is not None:
        on["tokenize"] = bool(tok)
    for name in FEATURES:
        if not on.get(name) and name not in notes:
            notes[name] = "not probed: a prerequisite is missing"
    caps = Capabilities(top_logprobs_max=top_max, notes=notes, errors=errors, protocol_warnings=tuple(sorted(set(warnings))))
    features: dict[str, Any] = {name: on.get(name, False) for name in FEATURES}
    return replace(caps, **features)
