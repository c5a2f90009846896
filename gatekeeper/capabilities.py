"""Probing what an endpoint supports before the gates run.

Real servers differ: some silently ignore `logprobs`, cap `top_logprobs` low, have no echo or
prompt logprobs, no /tokenize, no tool parser, or end streams without `data: [DONE]`. Each probe
sends one small request and records what came back; a check that needs a missing capability is
then a SKIP with the probe's reason, never a silent pass.
"""

from __future__ import annotations

from typing import Any

from gatekeeper.client import Endpoint
from gatekeeper.errors import EndpointError

PROBE_MESSAGES = [{"role": "user", "content": "Reply with exactly: OK"}]
PROBE_TOOL = {
    "type": "function",
    "function": {"name": "ping", "description": "Check the service.", "parameters": {"type": "object", "properties": {}}},
}


def is_transport_failure(e: EndpointError) -> bool:
    """True when the exchange broke (refused, timed out, 5xx, garbled), as opposed to the
    endpoint saying it does not support something (404/405/501, or a 4xx about the request)."""
    return e.kind in ("connect", "timeout", "stream", "malformed") or (e.kind == "http" and (e.status or 500) >= 500)


def probe(ep: Endpoint) -> dict[str, Any]:
    """Capabilities of one endpoint: booleans per feature plus `notes` saying why one is off
    and `protocol_warnings` for tolerated deviations."""
    caps: dict[str, Any] = {"notes": {}, "errors": {}, "protocol_warnings": []}

    def attempt(name: str, fn) -> Any:
        if caps["errors"]:  # the endpoint is already failing: don't pay a timeout per probe
            caps[name] = False
            caps["notes"][name] = "not probed: an earlier probe request failed"
            return None
        try:
            return fn()
        except EndpointError as e:
            caps[name] = False
            caps["notes"][name] = f"{e.kind}: {e.detail}"[:200]
            if is_transport_failure(e):
                caps["errors"][name] = str(e)[:300]
            return None

    chat = attempt("chat", lambda: ep.chat(PROBE_MESSAGES, max_tokens=4))
    if chat is not None:
        caps["chat"] = True
        caps["protocol_warnings"] += list(chat.protocol_warnings)
    comp = attempt("completions", lambda: ep.completion("Hello", max_tokens=1))
    if comp is not None:
        caps["completions"] = True

    if caps.get("chat"):
        lp = attempt("logprobs", lambda: ep.chat(PROBE_MESSAGES, max_tokens=2, logprobs=True, top_logprobs=5))
        if lp is not None:
            ok = bool(lp.logprobs) and all(t.logprob is not None for t in lp.logprobs)
            caps["logprobs"] = ok
            if not ok:
                caps["notes"]["logprobs"] = "logprobs were requested but the response has none (silently ignored)"
            caps["protocol_warnings"] += list(lp.protocol_warnings)
        top = attempt("top_logprobs_20", lambda: ep.chat(PROBE_MESSAGES, max_tokens=1, logprobs=True, top_logprobs=20))
        caps["top_logprobs_max"] = 20 if top is not None and top.logprobs and len(top.logprobs[0].top) >= 20 else (
            5 if caps.get("logprobs") else 0)
        caps.pop("top_logprobs_20", None)
        tools = attempt("tools", lambda: ep.chat(PROBE_MESSAGES, max_tokens=4, tools=[PROBE_TOOL], tool_choice="auto"))
        if tools is not None:
            caps["tools"] = True
        stream = attempt("streaming", lambda: ep.chat(PROBE_MESSAGES, max_tokens=4, stream=True))
        if stream is not None:
            caps["streaming"] = True
            caps["protocol_warnings"] += list(stream.protocol_warnings)

    if caps.get("completions"):
        echo = attempt("echo", lambda: ep.completion("Hello there", max_tokens=1, echo=True, logprobs=1))
        if echo is not None:
            ok = echo.text.startswith("Hello there") and len(echo.tokens) >= 2 and any(
                v is not None for v in echo.token_logprobs[1:])
            caps["echo"] = ok
            if not ok:
                caps["notes"]["echo"] = "echo with logprobs did not return the prompt's tokens and logprobs"
            caps["protocol_warnings"] += list(echo.protocol_warnings)
        plp = attempt("prompt_logprobs", lambda: ep.completion("Hello there", max_tokens=1, prompt_logprobs=1))
        if plp is not None:
            caps["prompt_logprobs"] = bool(plp.prompt_logprobs)
            if not caps["prompt_logprobs"]:
                caps["notes"]["prompt_logprobs"] = "prompt_logprobs requested but not returned"

    tok = attempt("tokenize", lambda: ep.tokenize("Hello there"))
    if tok is not None:
        caps["tokenize"] = bool(tok)
    for name in ("chat", "completions", "logprobs", "tools", "streaming", "echo", "prompt_logprobs", "tokenize"):
        caps.setdefault(name, False)
        if not caps[name] and name not in caps["notes"]:
            caps["notes"][name] = "not probed: a prerequisite is missing"
    caps["protocol_warnings"] = sorted(set(caps["protocol_warnings"]))
    return caps
