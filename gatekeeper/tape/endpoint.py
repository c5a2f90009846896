"""An Endpoint whose answers are recorded, and may come from a recording or a cache instead.

Every public request method of `Endpoint` goes through `_taped`: the request gets a key (method and
arguments) and an occurrence number (how many times this endpoint was asked the same before, so a
request sent twice on purpose — a determinism check, gate 5's two replays — keeps both answers);
a `Source` may answer it (a replayed run always does, a cache sometimes); otherwise the server is
asked. Whatever the answer, each `Sink` keeps it. Calls a method makes internally (chat's POST)
pass straight through.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import httpx

from gatekeeper.endpoints.chat_types import ChatMessage, ToolDefinition
from gatekeeper.endpoints.client import Endpoint
from gatekeeper.errors import EndpointError, RequestFacts
from gatekeeper.endpoints.responses import ChatResponse, CompletionResponse
from gatekeeper.json_types import JsonObject
from gatekeeper.tape.codec import decode, encode
from gatekeeper.tape.failure import before, describe, log_mark, log_since
from gatekeeper.text import utc_now
from gatekeeper.tape.key import request_key

T = TypeVar("T")


@dataclass(frozen=True)
class Asked:
    """One request as the tape sees it: who was asked what, the n-th time, in which gate."""

    role: str
    gate: str
    method: str
    key: str
    occurrence: int
    cacheable: bool = True  # the gate asking judges answers (not gate 1, which judges this launch)


class Source(Protocol):
    """Where an answer may come from instead of the server."""

    def answer(self, asked: Asked) -> JsonObject | None:
        """The encoded answer to `asked`, or None (the server is asked)."""

    def must_answer(self) -> bool:
        """True when the server may never be asked (a replay): a miss is an `unrecorded` error."""


class Sink(Protocol):
    """What keeps answers."""

    def keep(self, asked: Asked, answer: JsonObject, from_source: bool) -> None:
        """Keep the encoded answer to `asked` (`from_source`: it came from the source, not the server)."""


class TapedEndpoint(Endpoint):
    """An Endpoint that records every answer into its sinks and asks its source first."""

    def __init__(self, *args: Any, source: Source | None = None, sinks: Sequence[Sink] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.source, self.sinks = source, tuple(sinks)
        self._asked: Counter[str] = Counter()
        self._count_lock = threading.Lock()
        self._local = threading.local()
        self.cacheable = True  # set per gate by the runner (`Gate.reference_cacheable`)
        self.log_path: Path | None = None  # a launched target's log: a failed request's evidence quotes it
        self._last_answer: tuple[float, bool] | None = None  # when the server last answered (monotonic), and whether well

    @contextlib.contextmanager
    def periodic(self) -> Iterator[None]:
        """Requests this thread makes inside are keyed as periodic samples (their count depends on
        time, so they must not shift the occurrence numbers of the others)."""
        self._local.periodic = True
        try:
            yield
        finally:
            self._local.periodic = False

    def _key(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
        key = request_key(method, args, kwargs)
        return key + "#periodic" if getattr(self._local, "periodic", False) else key

    def recorded_ahead(self, method: str, *args: Any) -> bool:
        """Whether the replayed recording holds the next occurrence of this request (in this thread's keying)."""
        if self.source is None or not self.source.must_answer():
            return False
        key = self._key(method, args, {})
        with self._count_lock:
            occurrence = self._asked[key]
        return self.source.answer(Asked(self.role, self.gate, method, key, occurrence, self.cacheable)) is not None

    def _taped(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any], call: Callable[[], T]) -> T:
        if getattr(self._local, "inside", False):
            return call()
        key = self._key(method, args, kwargs)
        with self._count_lock:
            occurrence = self._asked[key]
            self._asked[key] += 1
        asked = Asked(self.role, self.gate, method, key, occurrence, self.cacheable)
        stored = self.source.answer(asked) if self.source is not None else None
        if stored is not None:
            value = decode(stored)
            self._keep(asked, stored, True)
            if isinstance(value, (ChatResponse, CompletionResponse)):
                self._record(value.e2e_s, value.ttft_s, value.completion_tokens)
            if isinstance(value, EndpointError):
                raise value
            return value
        if self.source is not None and self.source.must_answer():
            raise EndpointError("unrecorded", self.base_url, f"the recorded run has no answer to this {method} request "
                                "(it did not ask it): nothing can be judged without asking the server")
        self._local.inside = True
        sent_at, mark, t0, last = utc_now(), log_mark(self.log_path), time.perf_counter(), self._last_answer
        try:
            value = call()
        except EndpointError as e:
            elapsed = time.perf_counter() - t0
            e.facts = RequestFacts(role=self.role, gate=self.gate, request=describe(method, args, kwargs), key=key,
                                   occurrence=occurrence, started_at=sent_at, elapsed_s=round(elapsed, 3),
                                   retries=getattr(self._exchange_state, "retries", 0), log=log_since(self.log_path, mark),
                                   partial=e.partial, before=before(last, time.monotonic() - elapsed), after=self._after(e))
            self._last_answer = (time.monotonic(), False)
            self._keep(asked, encode(e), False)
            raise
        finally:
            self._local.inside = False
        self._last_answer = (time.monotonic(), True)
        self._keep(asked, encode(value), False)
        return value

    def _after(self, error: EndpointError) -> str:
        """What /health says just after a failure that may mean the server is gone (a broken
        connection, a timeout, a 5xx); "" for a refusal or an engine already known dead."""
        if error.kind not in ("stream", "connect", "timeout", "http") or (error.kind == "http" and (error.status or 0) < 500):
            return ""
        sick = self._unhealthy()
        return f"/health: {sick}" if sick else "alive: /health answered below 500 just after"

    def _keep(self, asked: Asked, answer: JsonObject, from_source: bool) -> None:
        for sink in self.sinks:
            sink.keep(asked, answer, from_source)

    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:  # noqa: D102 — Endpoint.chat, taped
        return self._taped("chat", (messages,), kwargs, lambda: super(TapedEndpoint, self).chat(messages, **kwargs))

    def completion(self, prompt: str | list[int], **kwargs: Any) -> CompletionResponse:  # noqa: D102
        return self._taped("completion", (prompt,), kwargs,
                           lambda: super(TapedEndpoint, self).completion(prompt, **kwargs))

    def tokenize(self, text: str | None = None, messages: Sequence[ChatMessage] | None = None,
                 tools: Sequence[ToolDefinition] | None = None) -> list[int]:  # noqa: D102
        return self._taped("tokenize", (text, messages), {"tools": tools} if tools else {},
                           lambda: super(TapedEndpoint, self).tokenize(text, messages, tools))

    def measured(self, name: str, value: Any) -> Any:
        """Record `value` as this target's answer to "measured NAME" (JSON-able); a replay returns the recorded one."""
        return self._taped("measured", (name,), {}, lambda: {"value": value})["value"]

    def get(self, path: str) -> httpx.Response:  # noqa: D102
        return self._taped("get", (path,), {}, lambda: super(TapedEndpoint, self).get(path))

    def get_json(self, path: str) -> dict[str, Any]:  # noqa: D102
        return self._taped("get_json", (path,), {}, lambda: super(TapedEndpoint, self).get_json(path))

    def post_json(self, path: str, body: Mapping[str, object]) -> dict[str, Any]:  # noqa: D102
        return self._taped("post_json", (path, body), {}, lambda: super(TapedEndpoint, self).post_json(path, body))
