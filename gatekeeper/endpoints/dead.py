"""An engine that died while its server kept answering: named as such, and sent no more work.

vLLM's API server outlives its engine: when the engine core raises (a model-runner bug, e.g.
vLLM 0.32.0's "CPU Generator does not use offset" on a seeded request split by chunked prefill),
the server answers every later request HTTP 500 ("EngineCore encountered an issue") and `/health`
503, while the process, the port and `/v1/models` stay up. Counted as errors, that reads as "the
candidate errs 3% more, concentrated in kind=tool" — true, and beside the point.

`FailureStreak` watches one endpoint's requests: a request that ends in a server-side failure (a
final status of 500 or more after the client's retries, or a connection that failed) extends the
streak, an answer below 400 ends it, a refusal (4xx) leaves it as it is. After `DEAD_AFTER`
failures in a row (or when a gate ends on a failure: `confirm`) it asks `/health` on a fresh connection; an answer of 500 or more, or no
connection at all, makes the engine `DeadEngine`: when the streak began, the first failure, the
request that met it and what /health said. From then on the endpoint sends nothing (each request
fails at once with kind "dead"), asking /health again every `RECHECK_S` in case the engine came
back. A /health that answers 200 or 404 keeps the endpoint sending: a server that fails some
requests but says it is healthy is judged request by request.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import httpx

from gatekeeper.json_types import JsonObject

DEAD_AFTER = 5  # server-side failures in a row before /health is asked
RECHECK_S = 5.0  # how often a dead engine's /health is asked again
FEATURES = ("stream", "seed", "temperature", "n", "logprobs", "top_logprobs", "prompt_logprobs", "echo", "stop", "tools",
            "tool_choice", "response_format", "max_tokens")


@dataclass(frozen=True)
class DeadEngine:
    """A target whose engine stopped serving: when, on which request, with which error."""

    role: str
    gate: str
    since: str  # ISO 8601 (UTC): the first failure of the streak
    first_error: str
    request: str  # the request that met the first failure: method, path and the features it carried
    health: str  # what /health answered when the engine was declared dead
    failed: int  # failures in a row when it was declared

    def describe(self) -> str:
        """e.g. "the candidate's engine died at 2026-12-04T08:01:02Z during gate shadow (…)"."""
        return (f"the {self.role}'s engine died at {self.since} during gate {self.gate}: {self.failed} requests in a row "
                f"failed and /health answers {self.health}; the first failure, on {self.request}: {self.first_error}")

    def to_json(self) -> JsonObject:
        """A JSON object (the recording keeps it, so a rejudge names the same death)."""
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "DeadEngine":
        """The inverse of `to_json`."""
        return cls(**d)


def unhealthy(http: httpx.Client) -> str | None:
    """What `http`'s server answers to GET /health when that is 500 or more, or no connection at all;
    None when it answers below 500 (alive, or a server without /health: cannot tell). Closes `http`."""
    try:
        with http:
            status = http.get("/health").status_code
    except httpx.HTTPError as e:
        return f"no answer ({type(e).__name__}: {e})"[:200]
    return f"HTTP {status}" if status >= 500 else None


def describe_request(method: str, path: str, body: Mapping[str, object] | None) -> str:
    """e.g. "POST /v1/chat/completions (seed=3, temperature=0.8, max_tokens=64, 1,840 characters of prompt)"."""
    if not body:
        return f"{method} {path}"
    shown = [f"{k}={_short(body[k])}" for k in FEATURES if k in body]
    prompt = body.get("messages", body.get("prompt"))
    size = len(str(prompt)) if prompt is not None else 0
    return f"{method} {path} ({', '.join(shown + ([f'{size:,} characters of prompt'] if size else []))})"


def _short(value: Any) -> str:
    text = value if isinstance(value, (int, float, bool)) else type(value).__name__ if isinstance(value, (list, dict)) else value
    return str(text)[:40]


class FailureStreak:
    """One endpoint's run of server-side failures and, once /health confirms it, its death."""

    def __init__(self, role: str, health: Callable[[], str | None]) -> None:
        """`health()` asks /health on a fresh connection: None when it answers below 500 (alive or
        cannot tell), else what it answered ("HTTP 503", "connect error: …")."""
        self.role, self._health = role, health
        self._lock = threading.Lock()
        self._count = 0
        self._first: tuple[str, str, str, str] | None = None  # (gate, since, error, request)
        self._first_sent = float("-inf")  # when the streak's first failure came back (monotonic)
        self.dead: DeadEngine | None = None
        self._checked_at = 0.0

    def answered(self, status: int, sent_at: float) -> None:
        """A request's final answer: below 400 ends the streak (and a death: the engine is back),
        unless the request was sent before the streak's first failure came back (`sent_at`,
        monotonic): a request in flight when the engine died may still complete, and proves nothing."""
        if status < 400:
            with self._lock:
                if sent_at >= self._first_sent:
                    self._count, self._first, self.dead, self._first_sent = 0, None, None, float("-inf")

    def failed(self, gate: str, error: str, request: str) -> None:
        """A request that failed server-side; may ask /health and declare the engine dead."""
        with self._lock:
            self._count += 1
            if self._first is None:
                self._first, self._first_sent = (gate, _now(), error[:400], request), time.monotonic()
            due = self.dead is None and self._count >= DEAD_AFTER and time.monotonic() - self._checked_at >= RECHECK_S
            if due:
                self._checked_at = time.monotonic()
        if due:
            self._declare_if_unhealthy()

    def blocked(self) -> DeadEngine | None:
        """The death that stops this request from being sent, or None (send it). A dead engine's
        /health is asked again every RECHECK_S; a healthy answer lifts the block."""
        with self._lock:
            dead, due = self.dead, self.dead is not None and time.monotonic() - self._checked_at >= RECHECK_S
            if due:
                self._checked_at = time.monotonic()
        if dead is not None and due and self._health() is None:
            with self._lock:
                self._count, self._first, self.dead, self._first_sent = 0, None, None, float("-inf")
            return None
        return dead

    def confirm(self) -> DeadEngine | None:
        """After a gate: when its last request failed server-side (a gate often stops at its first
        ERROR, long before `DEAD_AFTER`), ask /health now; the death, if it answers 500 or more."""
        with self._lock:
            pending = self.dead is None and self._count > 0
        if pending:
            self._declare_if_unhealthy()
        return self.dead

    def _declare_if_unhealthy(self) -> None:
        answer = self._health()
        if answer is None:
            return
        with self._lock:
            if self._first is not None and self.dead is None:
                gate, since, error, request = self._first
                self.dead = DeadEngine(self.role, gate, since, error, request, answer, self._count)


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
