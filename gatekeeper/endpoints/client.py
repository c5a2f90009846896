"""The HTTP client for one OpenAI-compatible endpoint; every failure becomes an EndpointError.

Transport problems (refused connection, timeout, HTTP errors, malformed JSON, cut streams) are
wrapped here, at the boundary, with the URL and status, so gates can record them as ERROR
checks instead of crashing. Tolerated deviations (a stream without `data: [DONE]`, logprobs in
the other API's shape, an answer naming another model) are returned as `protocol_warnings` for
the gates to report.

What a misbehaving server can do and what it becomes:
- a connection closed before any byte of the answer (a kept-alive connection the server closed just
  as the request went out; a reset on send): sent once more on a fresh connection, counted in
  `retried`, then `stream`;
- 502, 503 or 504 without `Retry-After` (a balancer or an engine briefly overloaded): asked again
  up to three times in all with a short backoff, every retry counted in `retried` (and in the
  answer's `retries`), then `http`;
- 429, 502, 503 or 504 with `Retry-After`: waited out and retried while the retry budget lasts,
  then `rate_limited` (429) or `http` (the policy and its bounds: `gatekeeper/endpoints/retry.py`);
  an answer's `retries` counts the 5xx ones only (a 429 is the server's stated quota);
- 401/403: `auth`, naming the variable the key should come from;
- a body that drips, or a stream of keep-alive comments: every request has one overall deadline
  (`timeout_s`), checked on every chunk, not only a per-read timeout → `timeout`;
- a stream or body cut after its first byte: `stream`, saying after how many bytes (evidence: never
  sent again, since the server may have done the work);
- a body larger than `max_body_bytes` (streams included): the connection is dropped → `oversize`;
- any answer not in the expected shape (not JSON, an SSE event that is not an object, missing
  choices, a field of the wrong type) → `malformed`, never an assert or a gate crash.
"""

from __future__ import annotations

import contextlib
from collections import Counter
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Iterator

import httpx

from gatekeeper.errors import EndpointError
from gatekeeper.endpoints.chat_types import ChatMessage, ToolDefinition
from gatekeeper.endpoints.dead import DeadEngine, FailureStreak, describe_request, unhealthy
from gatekeeper.endpoints.exchange import (closed_before_answer, error_message, retry_after, sse_lines, status_error,
                                           without_userinfo)
from gatekeeper.endpoints.retry import (
    ATTEMPTS,
    GIVE_UP_AFTER,
    KEEPALIVE_EXPIRY_S,
    MAX_WAITS,
    TRANSIENT_STATUSES,
    Retried,
    backoff_wait,
    note,
)
from gatekeeper.endpoints.wire import assemble_chat_stream, parse_chat, parse_completion, shaped, sse_events
from gatekeeper.endpoints.responses import ChatResponse, CompletionResponse
from gatekeeper.results import RequestTiming


DEFAULT_MAX_BODY_BYTES = 32 * 2**20  # a chat answer of a few thousand tokens with top-20 logprobs is < 2 MB
DEFAULT_RETRY_BUDGET_S = 30.0


class Endpoint:
    """A target's OpenAI-compatible surface: chat, completions, tokenize, raw GETs.

    Thread-safe: gates fan requests out over threads. Every request's latency is recorded in
    `timings` (for the performance report), and every retry after a transient failure in
    `retried`, both tagged with the role and the current gate. `timeout_s` is each request's
    overall deadline; `transient_attempts` how many times a 502/503/504 without Retry-After is
    sent in all (1: never again); `key_source` names where the API key comes from (e.g. "the
    environment variable PROD_KEY"), for the hint of an `auth` error; `watch_death=False` (a
    readiness poll) never declares the engine dead (endpoints/dead.py).
    """

    def __init__(self, role: str, base_url: str, model: str, api_key: str | None = None, timeout_s: float = 120.0,
                 *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES, retry_budget_s: float = DEFAULT_RETRY_BUDGET_S,
                 transient_attempts: int = ATTEMPTS, key_source: str | None = None, watch_death: bool = True):
        self.role = role
        self.base_url = without_userinfo(base_url) if api_key else base_url.rstrip("/")
        self.model = model
        self.timeout_s, self.max_body_bytes, self.retry_budget_s = timeout_s, max_body_bytes, retry_budget_s
        self.transient_attempts = transient_attempts
        self.retried: list[Retried] = []
        self._exchange_state = threading.local()  # this thread's current exchange: its retries after a 502/503/504
        self.sent: Counter[str] = Counter()  # requests sent per gate (a retry is not another request)
        self._failing_in_a_row = 0  # requests that still failed transiently after their retries
        self._key_sent, self._key_source = bool(api_key), key_source
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client_args: dict[str, Any] = {"base_url": self.base_url, "headers": headers,
                                             "timeout": httpx.Timeout(timeout_s, connect=min(10.0, timeout_s))}
        self._http = httpx.Client(**self._client_args, limits=httpx.Limits(keepalive_expiry=KEEPALIVE_EXPIRY_S))
        self.timings: list[RequestTiming] = []
        self._lock = threading.Lock()
        self.gate = ""
        # A readiness poll (watch_death=False) meets refused connections while the engine starts:
        # that is "not up yet", never a death, and must not hold its polls back for RECHECK_S.
        self.streak = FailureStreak(role, self._unhealthy if watch_death else lambda: None)

    @property
    def dead(self) -> DeadEngine | None:
        """The engine's death, once requests kept failing and /health confirmed it (endpoints/dead.py)."""
        return self.streak.dead

    def _unhealthy(self) -> str | None:
        """What /health answers on a fresh connection when that is 500 or more, or no connection (dead.py)."""
        return unhealthy(httpx.Client(**{**self._client_args, "timeout": httpx.Timeout(5.0)}))

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

    def _retry_wait(self, r: httpx.Response, waited: float, retries: int, deadline: float) -> float | None:
        """Seconds to wait before sending again after `r` (the `retries`-th retry, 0-based), or None
        to keep the answer: gatekeeper/endpoints/retry.py's policy."""
        if r.status_code != 429 and r.status_code not in TRANSIENT_STATUSES:
            return None
        after = retry_after(r.headers.get("retry-after"))
        if after is not None:  # the server says when: honoured within the budget, the deadline and MAX_WAITS
            wait, allowed = after, waited + after <= self.retry_budget_s and retries < MAX_WAITS
        else:  # a transient failure that does not say: a few quick retries, unless this server keeps failing
            with self._lock:
                giving_up = self._failing_in_a_row >= GIVE_UP_AFTER
            wait = backoff_wait(retries)
            allowed = r.status_code != 429 and retries < self.transient_attempts - 1 and not giving_up
        return wait if allowed and time.monotonic() + wait < deadline else None

    def _settled(self, status: int, retries: int) -> None:
        """Count a request's last answer: a transient failure kept after retries, or a success."""
        with self._lock:
            if status in TRANSIENT_STATUSES and retries:
                self._failing_in_a_row += 1
            elif status < 400:
                self._failing_in_a_row = 0

    def _note_retry(self, method: str, path: str, r: httpx.Response, body: bytes, wait: float) -> None:
        if r.status_code != 429:  # a quota the server states is not a failure (run/retry_check.py)
            self._exchange_state.retries = getattr(self._exchange_state, "retries", 0) + 1
        self._note(Retried(self.role, self.gate, method, path, r.status_code, round(wait, 3),
                           error_message(r.status_code, r.reason_phrase, body)))

    def _note(self, retried: Retried) -> None:
        with self._lock:
            self.retried.append(retried)
        note(retried)

    def _status_error(self, path: str, r: httpx.Response, body: bytes, waited: float, retries: int = 0) -> EndpointError:
        """The EndpointError for a final status >= 400 (after `retries` retries, `waited` seconds)."""
        hint = (f"the key from {self._key_source} was refused" if self._key_sent and self._key_source else
                "the key was refused" if self._key_sent else
                "no API key was sent: name the variable that holds it with the target's api_key_env")
        return status_error(self._url(path), r, error_message(r.status_code, r.reason_phrase, body), waited, retries, hint)

    def _chunks(self, path: str, r: httpx.Response, deadline: float) -> Iterator[bytes]:
        """The body's bytes as they come, within the deadline and the size cap."""
        size = 0
        chunks = r.iter_bytes()
        while True:
            try:
                chunk = next(chunks)
            except StopIteration:
                return
            except httpx.HTTPError as e:  # raised here, in the reader's frame, not in _exchange's
                err = self._classify(path, e)
                if size:  # evidence of where it broke: never sent again (the server may have done the work)
                    err = EndpointError(err.kind, err.url, f"{err.detail} (the answer broke after {size} bytes)", err.status)
                raise err from None
            size += len(chunk)
            if size > self.max_body_bytes:
                raise EndpointError("oversize", self._url(path), f"response larger than {self.max_body_bytes} bytes: "
                                    "connection dropped (max_body_bytes)")
            if time.monotonic() > deadline:
                raise EndpointError("timeout", self._url(path), f"no complete answer within {self.timeout_s:g} s "
                                    "(the request's overall deadline; the server kept the connection open)")
            yield chunk

    def _exchange(self, method: str, path: str, body: Mapping[str, object] | None,
                  keep: Callable[[int], bool] = lambda status: status < 400) -> Iterator[tuple[httpx.Response, Iterator[bytes]]]:
        """Send, retrying as gatekeeper/endpoints/retry.py says; yields once: the final response (a status
        `keep` accepts: below 400 unless told otherwise) and its capped, deadline-bound chunks.
        Raises EndpointError for everything else. Retries happen before any of a body is
        yielded: a stream is never read twice."""
        deadline = time.monotonic() + self.timeout_s
        waited, retries = 0.0, 0
        self._exchange_state.retries = 0
        dead = self.streak.blocked()
        if dead is not None:
            raise EndpointError("dead", self._url(path), "not sent: " + dead.describe(), 503)
        with self._lock:
            self.sent[self.gate] += 1
        sent_at = time.monotonic()
        http, reconnected = self._http, False
        try:
            while True:
                try:
                    r = http.send(http.build_request(method, path, json=body), stream=True)
                except httpx.HTTPError as e:
                    if reconnected or not closed_before_answer(e) or time.monotonic() >= deadline:
                        raise
                    self._note(Retried(self.role, self.gate, method, path, None, 0.0, str(e) or type(e).__name__))
                    http, reconnected = httpx.Client(**self._client_args, limits=httpx.Limits(max_keepalive_connections=0)), True
                    continue
                try:
                    wait = self._retry_wait(r, waited, retries, deadline)
                    if wait is None:
                        self._settled(r.status_code, retries)
                        if keep(r.status_code):
                            if r.status_code >= 500:
                                self.streak.failed(self.gate, f"HTTP {r.status_code}", describe_request(method, path, body))
                            else:
                                self.streak.answered(r.status_code, sent_at)
                            yield r, self._chunks(path, r, deadline)
                            return
                        content = b"".join(self._chunks(path, r, deadline))
                        if r.status_code >= 500:
                            self.streak.failed(self.gate, f"HTTP {r.status_code}: "
                                               + error_message(r.status_code, r.reason_phrase, content),
                                               describe_request(method, path, body))
                        else:
                            self.streak.answered(r.status_code, sent_at)
                        raise self._status_error(path, r, content, waited, retries)
                    self._note_retry(method, path, r, b"".join(self._chunks(path, r, deadline)), wait)
                finally:
                    r.close()
                time.sleep(wait)
                waited += wait
                retries += 1
        except httpx.HTTPError as e:
            error = self._classify(path, e)
            if error.kind in ("connect", "stream"):  # a server that is not there, or closed on us
                self.streak.failed(self.gate, f"{error.kind}: {error.detail}", describe_request(method, path, body))
            raise error from None
        finally:
            if http is not self._http:
                http.close()

    def _send(self, method: str, path: str, body: Mapping[str, object] | None = None) -> tuple[httpx.Response, bytes]:
        """One non-streamed exchange: the final response and its whole (capped) body."""
        for r, chunks in self._exchange(method, path, body):
            return r, b"".join(chunks)
        raise AssertionError("unreachable")  # _exchange yields once or raises

    def get(self, path: str) -> httpx.Response:
        """GET a path, retried like any request; raises EndpointError for transport failures,
        rate limits, auth refusals and oversized bodies; any other status returns (its body
        readable as usual: a /health that still answers 503 after the retries is the caller's to judge)."""
        for r, chunks in self._exchange("GET", path, None, keep=lambda status: status not in (401, 403, 429)):
            content = b"".join(chunks)
            return httpx.Response(r.status_code, headers=r.headers, content=content, request=r.request)
        raise AssertionError("unreachable")  # _exchange yields once or raises

    def get_json(self, path: str) -> dict[str, Any]:
        """GET a path and return the decoded JSON object; HTTP errors (status >= 400) and bodies
        that are not a JSON object are EndpointErrors, classified like any other request's."""
        return self._decode(path, *self._send("GET", path))

    def post_json(self, path: str, body: Mapping[str, object]) -> dict[str, Any]:
        """POST JSON and return the decoded JSON object; errors classified."""
        return self._decode(path, *self._send("POST", path, body))

    def _decode(self, path: str, r: httpx.Response, content: bytes) -> dict[str, Any]:
        try:
            data = json.loads(content)
        except ValueError:
            raise EndpointError("malformed", self._url(path), f"body is not JSON: {content[:120]!r}", r.status_code) from None
        if not isinstance(data, dict):
            raise EndpointError("malformed", self._url(path), "body is not a JSON object", r.status_code)
        return data

    def _stream(self, path: str, body: Mapping[str, object]) -> Iterator[dict[str, Any] | str]:
        """Yield decoded SSE events; yields the string "[DONE]" for the terminator."""
        for _, chunks in self._exchange("POST", path, body):
            yield from sse_events(sse_lines(chunks), self._url(path))

    @contextlib.contextmanager
    def periodic(self) -> Iterator[None]:
        """Requests this thread makes inside are periodic samples, as many as time allows (a
        recording keys them apart from the others, `tape/endpoint.py`); here, nothing changes."""
        yield

    def measured(self, name: str, value: Any) -> Any:
        """A figure a gate measured of this target's live traffic (not an answer: e.g. the peak of
        requests in flight), passed through the recording so that a replay reads the figure the run
        measured rather than measuring its own instant answers; here, `value` as it is."""
        return value

    def recorded_ahead(self, method: str, *args: Any) -> bool:
        """Whether a recording replayed through this endpoint holds a further answer to this
        request (periodic samples are replayed to the last); a live endpoint: False."""
        return False

    def _record(self, e2e: float, ttft: float | None, tokens: int | None) -> None:
        with self._lock:
            self.timings.append(RequestTiming(self.role, self.gate, e2e, ttft, tokens or 0))

    # -- OpenAI API -----------------------------------------------------------------------
    def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int = 64,
        temperature: float = 0.0,
        stream: bool = False,
        logprobs: bool = False,
        top_logprobs: int = 0,
        tools: Sequence[ToolDefinition] | None = None,
        tool_choice: Any = None,
        seed: int | None = None,
        stop: list[str] | None = None,
        extra: Mapping[str, object] | None = None,
    ) -> ChatResponse:
        """One chat completion; streaming responses are assembled into the same shape."""
        body: dict[str, object] = {"model": self.model, "messages": messages, "max_tokens": max_tokens, "temperature": temperature}
        if logprobs:
            body["logprobs"] = True
            body["top_logprobs"] = top_logprobs
        optional = {"tools": tools or None, "tool_choice": tool_choice, "seed": seed, "stop": stop or None}
        body.update({k: v for k, v in optional.items() if v is not None})
        body.update(extra or {})
        t0 = time.perf_counter()
        url = self._url("/v1/chat/completions")
        if not stream:
            data = self.post_json("/v1/chat/completions", body)
            resp = shaped(url, lambda: parse_chat(url, data, time.perf_counter() - t0))
        else:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
            resp = shaped(url, lambda: assemble_chat_stream(url, self._stream("/v1/chat/completions", body), t0))
        resp = self._answered(resp)
        self._record(resp.e2e_s, resp.ttft_s, resp.completion_tokens)
        return resp

    def _answered(self, resp: Any) -> Any:
        """The response as answered: with its exchange's 5xx retries (not a reconnection: the
        transport's) and a protocol warning when it names another model than asked for."""
        retries = getattr(self._exchange_state, "retries", 0)
        if retries:
            resp = replace(resp, retries=retries)
        named = resp.model
        if self.model and isinstance(named, str) and named and named != self.model:
            return replace(resp, protocol_warnings=(*resp.protocol_warnings,
                                                    f"the answer names model {named!r}, asked for {self.model!r}"))
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
        extra: Mapping[str, object] | None = None,
    ) -> CompletionResponse:
        """One text completion (non-streaming)."""
        body: dict[str, object] = {"model": self.model, "prompt": prompt, "max_tokens": max_tokens, "temperature": temperature}
        if echo:
            body["echo"] = True
        if logprobs is not None:
            body["logprobs"] = logprobs
        if prompt_logprobs is not None:
            body["prompt_logprobs"] = prompt_logprobs
        body.update(extra or {})
        t0 = time.perf_counter()
        data = self.post_json("/v1/completions", body)
        url = self._url("/v1/completions")
        resp = self._answered(shaped(url, lambda: parse_completion(url, data, time.perf_counter() - t0)))
        self._record(resp.e2e_s, None, resp.completion_tokens)
        return resp

    def tokenize(self, text: str | None = None, messages: Sequence[ChatMessage] | None = None,
                 tools: Sequence[ToolDefinition] | None = None) -> list[int]:
        """Token ids via vLLM's /tokenize of `text`, or of `messages` with `tools` as chat renders them."""
        body: dict[str, object] = {"model": self.model}
        if messages is not None:
            body.update(messages=messages, **({"tools": tools} if tools else {}))
        else:
            body["prompt"] = text
            body["add_special_tokens"] = False
        data = self.post_json("/tokenize", body)
        tokens = data.get("tokens")
        if not isinstance(tokens, list):
            raise EndpointError("malformed", self._url("/tokenize"), "no 'tokens' list in the response")
        return tokens
