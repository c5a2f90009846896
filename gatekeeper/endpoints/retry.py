"""The retry policy for transient server failures, applied once, in the client, for every gate.

Real servers answer an occasional 502/503/504 (a proxy restarting a worker, a queue briefly full,
a balancer with no healthy backend for a moment), often without `Retry-After`. One such answer
must not ERROR a gate and HOLD the run, nor count as an error of the target it came from, so
`gatekeeper.endpoints.client.Endpoint` asks again:

- a 502/503/504 without `Retry-After`: up to `ATTEMPTS` sends in all, after `BACKOFF_S`, then
  twice that (at most 0.75 s of waiting per request);
- a 429/502/503/504 with `Retry-After`: waited out while the endpoint's retry budget (seconds)
  and the request's deadline last, at most `MAX_WAITS` times (a server saying "now" forever is
  not asked forever);
- a connection that closed before any byte of the answer (the kept-alive connection's race every
  uvicorn server has: the server closes an idle connection after its keep-alive, 5 s for uvicorn,
  just as the client sends on it; a reset on send): sent once more, on a fresh connection. Pooled
  connections expire after `KEEPALIVE_EXPIRY_S`, before common servers close them, so the race is
  rare to begin with;
- nothing else: a refusal (4xx) gets the same answer again, a 500 is a bug, a dead server
  (refused connection, timeout) would cost another timeout, and a stream that broke after its
  first byte is evidence (the error says after how many bytes), never read twice.

Every retry is counted where it happened (`Endpoint.retried`, by role and gate, beside
`Endpoint.sent`, the requests sent per gate, so the roles' retry rates can be compared:
gatekeeper/run/retry_check.py) and in every list a
`with_retries` around the call collects into (gate 1 shows its probe's and canary's). A server that
keeps failing still fails: the last answer is raised, saying how often it was asked. After
`GIVE_UP_AFTER` requests in a row that failed even so, the endpoint stops retrying until one
succeeds: a server that answers 503 to everything costs one send per request, not three.

The performance gate's load generator (gatekeeper/perf/loadgen.py) has its own HTTP client and
retries only a connection closed before any answer (the server never saw the request; timed from
the second send): any other failed request is a measured error.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from gatekeeper.errors import EndpointError

T = TypeVar("T")

ATTEMPTS = 3
BACKOFF_S = 0.25  # then 0.5 s: at most 0.75 s spent waiting per request
TRANSIENT_STATUSES = (502, 503, 504)
MAX_WAITS = 10  # retries a request's Retry-After answers may ask for, within the retry budget
GIVE_UP_AFTER = 3  # requests in a row still failing after their retries: the endpoint stops retrying
KEEPALIVE_EXPIRY_S = 2.0  # an idle pooled connection is dropped before uvicorn's 5 s keep-alive closes it
CLOSED_BEFORE_ANSWER = "connection closed before any response"

_collecting: contextvars.ContextVar[tuple[list[str], ...]] = contextvars.ContextVar("gatekeeper_retry_lists", default=())


@dataclass(frozen=True)
class Retried:
    """One retry the client made: which target and gate, what it asked, what came back, how long it waited."""

    role: str
    gate: str
    method: str
    path: str
    status: int | None  # None: the connection closed before any response byte (sent again on a fresh one)
    wait_s: float
    detail: str

    @property
    def reconnected(self) -> bool:
        """Whether this retry followed a connection closed before any answer (not an HTTP status)."""
        return self.status is None

    def describe(self) -> str:
        """e.g. "HTTP 503: upstream overloaded" or "connection closed before any response: Server
        disconnected without sending a response." (what gate 1's tables show)."""
        head = CLOSED_BEFORE_ANSWER if self.status is None else f"HTTP {self.status}"
        return f"{head}: {self.detail}"[:200]


def transient(e: EndpointError) -> bool:
    """Whether an answer is a passing server-side hiccup worth asking again (502/503/504)."""
    return e.kind == "http" and e.status in TRANSIENT_STATUSES


def backoff_wait(retry: int) -> float:
    """The wait before the `retry`-th retry (0-based) of an answer without Retry-After."""
    return BACKOFF_S * 2 ** retry


def note(retried: Retried) -> None:
    """Count a retry in every list the `with_retries` calls around this one collect into."""
    for into in _collecting.get():
        into.append(retried.describe())


def with_retries(fn: Callable[[], T], retried: list[str], attempts: int = ATTEMPTS, backoff_s: float = BACKOFF_S) -> T:
    """`fn()`, with every retry the client makes for it appended to `retried` (what the report
    counts). A transient failure the client did not already retry (`EndpointError.retries_done`
    false: an error raised elsewhere) is retried here, up to `attempts` tries in all; the last
    failure is raised."""
    token = _collecting.set((*_collecting.get(), retried))
    try:
        for attempt in range(attempts):
            try:
                return fn()
            except EndpointError as e:
                if not transient(e) or e.retries_done or attempt == attempts - 1:
                    raise
                retried.append(f"HTTP {e.status}: {e.detail}"[:200])
                time.sleep(backoff_s * 2 ** attempt)
        raise AssertionError("unreachable")  # the loop returns or raises
    finally:
        _collecting.reset(token)
