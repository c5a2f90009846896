"""The HTTP client for one OpenAI-compatible endpoint; every failure becomes an EndpointError.

Transport problems (refused connection, timeout, HTTP errors, malformed JSON, cut streams) are
wrapped here, at the boundary, with the URL and status, so gates can record them as ERROR
checks instead of crashing. Tolerated deviations (a stream without `data: [DONE]`, logprobs in
the other API's shape) are returned as `protocol_warnings` for the gates to report.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any, Iterator

import httpx

from gatekeeper.errors import EndpointError
from gatekeeper.responses import ChatResponse, CompletionResponse, TokenLogprob, ToolCall
from gatekeeper.results import RequestTiming


class Endpoint:
    """A target's OpenAI-compatible surface: chat, completions, tokenize, raw GETs.

    Thread-safe: gates fan requests out over threads. Every request's latency is recorded in
    `timings` (for the performance report), tagged with the role and the current gate.
    """

    def __init__(self, role: str, base_url: str, model: str, api_key: str | None = None, timeout_s: float = 120.0):
        self.role = role
        self.base_url = base_url.rstrip("/")
        self.model = model
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(base_url=self.base_url, headers=headers, timeout=httpx.Timeout(timeout_s, connect=10.0))
        self.timings: list[RequestTiming] = []
        self._lock = threading.Lock()
        self.gate = ""

    def close(self) -> None:
        """Release connections."""
        self._http.close()

    # -- raw HTTP -------------------------------------------------------------------------
    def _url(self, path: str) -> str:
        return self.base_url + path

    def _classify(self, path: str, e: Exception) -> EndpointError:
        if isinstance(e, httpx.TimeoutException):
            return EndpointError("timeout", self._url(path), str(e) or "request timed out")
        if isinstance(e, (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)):
            kind = "connect" if isinstance(e, httpx.ConnectError) else "stream"
            return EndpointError(kind, self._url(path), str(e) or type(e).__name__)
        return EndpointError("connect", self._url(path), f"{type(e).__name__}: {e}")

    def get(self, path: str) -> httpx.Response:
        """GET a path; raises EndpointError only for transport failures (any status returns)."""
        try:
            return self._http.get(path)
        except httpx.HTTPError as e:
            raise self._classify(path, e) from None

    def get_json(self, path: str) -> dict[str, Any]:
        """GET a path and return the decoded JSON object; HTTP errors (status >= 400) and bodies
        that are not a JSON object are EndpointErrors, classified like any other request's."""
        return self._decode(path, self.get(path))

    def post_json(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST JSON and return the decoded JSON object; errors classified."""
        try:
            r = self._http.post(path, json=body)
        except httpx.HTTPError as e:
            raise self._classify(path, e) from None
        return self._decode(path, r)

    def _decode(self, path: str, r: httpx.Response) -> dict[str, Any]:
        if r.status_code >= 400:
            kind = "unsupported" if r.status_code in (404, 405, 501) else "http"
            raise EndpointError(kind, self._url(path), _error_message(r), status=r.status_code)
        try:
            data = r.json()
        except ValueError:
            raise EndpointError("malformed", self._url(path), f"body is not JSON: {r.text[:120]!r}", r.status_code) from None
        if not isinstance(data, dict):
            raise EndpointError("malformed", self._url(path), "body is not a JSON object", r.status_code)
        return data

    def _stream(self, path: str, body: dict[str, Any]) -> Iterator[dict[str, Any] | str]:
        """Yield decoded SSE events; yields the string "[DONE]" for the terminator."""
        try:
            with self._http.stream("POST", path, json=body) as r:
                if r.status_code >= 400:
                    r.read()
                    kind = "unsupported" if r.status_code in (404, 405, 501) else "http"
                    raise EndpointError(kind, self._url(path), _error_message(r), status=r.status_code)
                for line in r.iter_lines():
                    if not line or line.startswith(":"):
                        continue
                    if not line.startswith("data:"):
                        continue
                    payload = line[5:].strip()
                    if payload == "[DONE]":
                        yield "[DONE]"
                        return
                    try:
                        event = json.loads(payload)
                    except ValueError:
                        raise EndpointError("stream", self._url(path), f"SSE event is not JSON: {payload[:120]!r}") from None
                    if isinstance(event, dict) and "error" in event and "choices" not in event:
                        raise EndpointError("http", self._url(path), f"error event in stream: {event['error']}")
                    yield event
        except httpx.HTTPError as e:
            raise self._classify(path, e) from None

    def _record(self, e2e: float, ttft: float | None, tokens: int | None) -> None:
        with self._lock:
            self.timings.append(RequestTiming(self.role, self.gate, e2e, ttft, tokens or 0))

    # -- OpenAI API -----------------------------------------------------------------------
    def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        max_tokens: int = 64,
        temperature: float = 0.0,
        stream: bool = False,
        logprobs: bool = False,
        top_logprobs: int = 0,
        tools: list[dict[str, Any]] | None = None,
        tool_choice: Any = None,
        seed: int | None = None,
        stop: list[str] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> ChatResponse:
        """One chat completion; streaming responses are assembled into the same shape."""
        body: dict[str, Any] = {"model": self.model, "messages": messages, "max_tokens": max_tokens, "temperature": temperature}
        if logprobs:
            body["logprobs"] = True
            body["top_logprobs"] = top_logprobs
        if tools:
            body["tools"] = tools
        if tool_choice is not None:
            body["tool_choice"] = tool_choice
        if seed is not None:
            body["seed"] = seed
        if stop:
            body["stop"] = stop
        body.update(extra or {})
        t0 = time.perf_counter()
        if not stream:
            data = self.post_json("/v1/chat/completions", body)
            resp = _parse_chat(self._url("/v1/chat/completions"), data, time.perf_counter() - t0)
            self._record(resp.e2e_s, None, resp.completion_tokens)
            return resp
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        resp = _assemble_chat_stream(self._url("/v1/chat/completions"), self._stream("/v1/chat/completions", body), t0)
        self._record(resp.e2e_s, resp.ttft_s, resp.completion_tokens)
        return resp

    def completion(
        self,
        prompt: str | list[int],
        *,
        max_tokens: int = 16,
        temperature: float = 0.0,
        echo: bool = False,
        logprobs: int | None = None,
        prompt_logprobs: int | None = None,
        extra: dict[str, Any] | None = None,
    ) -> CompletionResponse:
        """One text completion (non-streaming)."""
        body: dict[str, Any] = {"model": self.model, "prompt": prompt, "max_tokens": max_tokens, "temperature": temperature}
        if echo:
            body["echo"] = True
        if logprobs is not None:
            body["logprobs"] = logprobs
        if prompt_logprobs is not None:
            body["prompt_logprobs"] = prompt_logprobs
        body.update(extra or {})
        t0 = time.perf_counter()
        data = self.post_json("/v1/completions", body)
        resp = _parse_completion(self._url("/v1/completions"), data, time.perf_counter() - t0)
        self._record(resp.e2e_s, None, resp.completion_tokens)
        return resp

    def tokenize(self, text: str | None = None, messages: list[dict[str, Any]] | None = None) -> list[int]:
        """Token ids via vLLM's /tokenize (EndpointError 'unsupported' if absent)."""
        body: dict[str, Any] = {"model": self.model}
        if messages is not None:
            body["messages"] = messages
        else:
            body["prompt"] = text
            body["add_special_tokens"] = False
        data = self.post_json("/tokenize", body)
        tokens = data.get("tokens")
        if not isinstance(tokens, list):
            raise EndpointError("malformed", self._url("/tokenize"), "no 'tokens' list in the response")
        return tokens


def _error_message(r: httpx.Response) -> str:
    try:
        data = r.json()
        err = data.get("error", data) if isinstance(data, dict) else data
        msg = err.get("message") if isinstance(err, dict) else err
        return str(msg)[:300]
    except ValueError:
        return r.text[:300] or r.reason_phrase


def _choice(url: str, data: dict[str, Any]) -> dict[str, Any]:
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise EndpointError("malformed", url, "response has no choices")
    return choices[0]


def _usage(data: dict[str, Any]) -> tuple[int | None, int | None]:
    u = data.get("usage") or {}
    return u.get("prompt_tokens"), u.get("completion_tokens")


def _chat_logprobs(lp: Any, warnings: list[str]) -> tuple[TokenLogprob, ...] | None:
    if lp is None:
        return None
    if isinstance(lp, dict) and isinstance(lp.get("content"), list):
        out = []
        for item in lp["content"]:
            top = {t.get("token", ""): t.get("logprob") for t in item.get("top_logprobs") or []}
            out.append(TokenLogprob(item.get("token", ""), item.get("logprob"), top))
        return tuple(out)
    if isinstance(lp, dict) and "token_logprobs" in lp:
        warnings.append("chat logprobs came in the completions shape (tokens/token_logprobs)")
        tops = lp.get("top_logprobs") or [None] * len(lp["tokens"])
        return tuple(TokenLogprob(t, x, dict(tp or {})) for t, x, tp in zip(lp["tokens"], lp["token_logprobs"], tops))
    warnings.append("chat logprobs in an unknown shape were ignored")
    return None


def _tool_calls(raw: Any, url: str) -> tuple[ToolCall, ...]:
    calls = []
    for tc in raw or []:
        fn = (tc or {}).get("function") or {}
        if not isinstance(fn.get("name"), str):
            raise EndpointError("malformed", url, "tool call without a function name")
        args = fn.get("arguments")
        calls.append(ToolCall(fn["name"], args if isinstance(args, str) else json.dumps(args), tc.get("id")))
    return tuple(calls)


def _parse_chat(url: str, data: dict[str, Any], e2e: float) -> ChatResponse:
    choice = _choice(url, data)
    msg = choice.get("message")
    if not isinstance(msg, dict):
        raise EndpointError("malformed", url, "choice has no message")
    warnings: list[str] = []
    pt, ct = _usage(data)
    return ChatResponse(
        text=msg.get("content") or "",
        tool_calls=_tool_calls(msg.get("tool_calls"), url),
        finish_reason=choice.get("finish_reason"),
        prompt_tokens=pt,
        completion_tokens=ct,
        logprobs=_chat_logprobs(choice.get("logprobs"), warnings),
        e2e_s=e2e,
        protocol_warnings=tuple(warnings),
        raw=data,
    )


def _assemble_chat_stream(url: str, events: Iterator[dict[str, Any] | str], t0: float) -> ChatResponse:
    text: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    finish = None
    pt = ct = None
    ttft = None
    logprobs: list[TokenLogprob] = []
    saw_logprobs = False
    done = False
    warnings: list[str] = []
    for event in events:
        if event == "[DONE]":
            done = True
            break
        assert isinstance(event, dict)
        if event.get("usage"):
            pt, ct = _usage(event)
        for choice in event.get("choices") or []:
            delta = choice.get("delta") or {}
            if ttft is None and (delta.get("content") or delta.get("tool_calls")):
                ttft = time.perf_counter() - t0
            if delta.get("content"):
                text.append(delta["content"])
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
                finish = choice["finish_reason"]
    if not done:
        if finish is None:
            raise EndpointError("stream", url, "stream ended before any finish_reason and without data: [DONE]")
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
        protocol_warnings=tuple(dict.fromkeys(warnings)),
    )


def _parse_completion(url: str, data: dict[str, Any], e2e: float) -> CompletionResponse:
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
    pt, ct = _usage(data)
    plp = choice.get("prompt_logprobs", data.get("prompt_logprobs"))
    return CompletionResponse(
        text=choice.get("text") or "",
        finish_reason=choice.get("finish_reason"),
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
