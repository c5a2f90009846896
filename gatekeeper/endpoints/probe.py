"""Probing what an endpoint supports, with one small request per feature.

Real servers differ: some silently ignore `logprobs`, cap `top_logprobs` low, have no echo or
prompt logprobs, no /tokenize, no tool parser, or end streams without `data: [DONE]`. Each probe
sends one small request and records what came back in a frozen `Capabilities`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from gatekeeper.capabilities import FEATURES, UNDETERMINED, Capabilities
from gatekeeper.endpoints.chat_types import ChatMessage, ToolDefinition
from gatekeeper.endpoints.client import Endpoint
from gatekeeper.errors import EndpointError
from gatekeeper.endpoints.retry import with_retries
from gatekeeper.endpoints.responses import ChatResponse

PROBE_MESSAGES: list[ChatMessage] = [{"role": "user", "content": "Reply with exactly: OK"}]
PROBE_TOOL: ToolDefinition = {
    "type": "function",
    "function": {"name": "ping", "description": "Check the service.", "parameters": {"type": "object", "properties": {}}},
}

# A request a tool-trained model answers with a call (the golden set's tool-weather case): whether
# the server turns the call into `tool_calls` is only visible when the model writes one.
PROBE_TOOL_MESSAGES: list[ChatMessage] = [
    {"role": "system", "content": "You are a helpful assistant that can call tools."},
    {"role": "user", "content": "Please what is the weather in Oslo in celsius."},
]
PROBE_WEATHER_TOOL: ToolDefinition = {
    "type": "function",
    "function": {"name": "get_weather", "description": "Current weather in a city.", "parameters": {
        "type": "object", "required": ["city", "unit"], "properties": {
            "city": {"type": "string", "description": "City name"},
            "unit": {"type": "string", "description": "Unit", "enum": ["celsius", "fahrenheit"]}}}},
}
# How models frame a tool call in raw text (Hermes/Qwen, Mistral, Llama 3, Llama 4 / functionary).
_CALL_MARKERS = ("<tool_call>", "[TOOL_CALLS]", "<|python_tag|>", "<function=")

# Words a 400/422 answer names when it refuses a parameter the probe sent for the feature.
_FEATURE_WORDS = {
    "completions": ("completion",), "logprobs": ("logprob",), "top_logprobs_20": ("logprob",), "tools": ("tool",),
    "tool_parsing": ("tool",), "streaming": ("stream",), "echo": ("echo", "logprob"),
    "prompt_logprobs": ("prompt_logprobs", "logprob"),
    "tokenize": ("tokeniz",),
}
_REFUSAL_WORDS = ("not supported", "requires", "enable", "unsupported", "not implemented", "not available", "unknown", "unrecognized",
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


# A failure that says the server itself is gone or broken, not that one request was refused:
# later probes are not sent (a dead server costs one timeout, not one per feature).
_SERVER_DOWN_KINDS = ("connect", "timeout")


def _server_down(e: EndpointError) -> bool:
    return e.kind in _SERVER_DOWN_KINDS or (e.kind == "http" and e.status is not None and e.status >= 500)


def _note(name: str, e: EndpointError) -> str:
    """What a refused probe request means, in words: vLLM's 400 for `tool_choice="auto"` without a
    parser is "tool calling not enabled on this server", not an unknown error."""
    text = e.detail.lower()
    if name == "tools" and ("enable-auto-tool-choice" in text or "tool-call-parser" in text or "tool_call_parser" in text):
        return ("tool calling is not enabled on this server (vLLM: start it with --enable-auto-tool-choice "
                f"--tool-call-parser NAME); the server said: {e.detail}")[:300]
    return f"{e.kind}: {e.detail}"[:200]


def probe(ep: Endpoint) -> Capabilities:
    """Probe one endpoint: one small request per feature. A request the server refuses (a 4xx for
    that feature) hides no other feature: the next probes are still sent. Only a server that is
    unreachable, timing out or answering 5xx is not asked again (a dead server costs one timeout,
    not one per feature)."""
    on: dict[str, bool] = {}
    notes: dict[str, str] = {}
    errors: dict[str, str] = {}
    warnings: list[str] = []
    down: list[str] = []
    retried: list[str] = []  # transient failures asked again (gatekeeper/endpoints/retry.py)

    def attempt(name: str, fn: Callable[[], Any]) -> Any:
        if down:
            notes[name] = f"not probed: the server stopped answering at the {down[0]} probe"
            return None
        try:
            return with_retries(fn, retried)
        except EndpointError as e:
            notes[name] = _note(name, e)
            if not is_missing_capability(name, e):
                errors[name] = str(e)[:300]
            if _server_down(e):
                down.append(name)
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
        top_max = 20 if top is not None and _top_count(top) >= 20 else (5 if on.get("logprobs") else 0)
        if attempt("tools", lambda: ep.chat(PROBE_MESSAGES, max_tokens=4, tools=[PROBE_TOOL], tool_choice="auto")) is not None:
            on["tools"] = True
        if on.get("tools"):
            parsed = attempt("tool_parsing", lambda: ep.chat(PROBE_TOOL_MESSAGES, max_tokens=64, tools=[PROBE_WEATHER_TOOL],
                                                               tool_choice="auto"))
            if parsed is not None:
                on["tool_parsing"], notes["tool_parsing"] = tool_parsing(parsed)
        stream = attempt("streaming", lambda: ep.chat(PROBE_MESSAGES, max_tokens=4, stream=True))
        if stream is not None:
            on["streaming"] = True
            on["stream_finish_reason"] = stream.finish_reason is not None
            if not on["stream_finish_reason"]:
                notes["stream_finish_reason"] = "the stream ended (data: [DONE]) without any choice carrying finish_reason"
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
    notes = {k: v for k, v in notes.items() if v}
    caps = Capabilities(top_logprobs_max=top_max, notes=notes, errors=errors, protocol_warnings=tuple(sorted(set(warnings))),
                        retried=tuple(retried))
    features: dict[str, Any] = {name: on.get(name, False) for name in FEATURES}
    return replace(caps, **features)


def _top_count(resp: ChatResponse) -> int:
    """How many top logprobs the first token came with, as sent: tokens that decode to the same
    text (vLLM sends "" for each partial UTF-8 byte) are one key of the parsed table but several here."""
    try:
        return len((resp.raw or {})["choices"][0]["logprobs"]["content"][0]["top_logprobs"])
    except (KeyError, IndexError, TypeError):
        return len(resp.logprobs[0].top) if resp.logprobs else 0


def tool_parsing(resp: ChatResponse) -> tuple[bool, str]:
    """Whether an answer to the tool probe shows a tool-call parser at work, and why not.

    Parsed `tool_calls`: yes. A well-formed call left in the text (`<tool_call>{"name": ...}`):
    no — the server has no parser for this model's format. No call at all, or call text that is
    not valid JSON: undetermined — the model, not the server, decided."""
    if resp.tool_calls:
        return True, ""
    text = resp.text
    at = min((i for i in (text.find(m) for m in _CALL_MARKERS) if i >= 0), default=-1)
    start = text.find("{", at if at >= 0 else 0)
    if start < 0 or (at < 0 and text[:start].strip()):
        return False, UNDETERMINED + "the model answered without writing a tool call, so parsing was not exercised"
    try:
        call, _ = json.JSONDecoder().raw_decode(text[start:])
    except ValueError:
        return False, UNDETERMINED + "the model's tool-call text is not valid JSON, so parsing was not exercised"
    if not isinstance(call, dict) or "name" not in call:
        return False, UNDETERMINED + "the answer holds JSON but no tool call, so parsing was not exercised"
    return False, (f"the model wrote a call to {call.get('name')!r} as text ({text[max(at, 0):][:60]!r}...) and the "
                   "server returned it as content, not tool_calls: no tool-call parser for this model's format "
                   "(vLLM: --enable-auto-tool-choice --tool-call-parser NAME)")
