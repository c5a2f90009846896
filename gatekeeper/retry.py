"""A bounded retry for the few requests a whole gate hangs on (the capability probe, the canary).

Real servers answer an occasional 502/503/504 (a proxy restarting a worker, a queue briefly
full) without `Retry-After`; the client retries only what says when to come back. One such answer
to a probe request must not ERROR gate 1 and HOLD the run, so these requests are tried up to
`ATTEMPTS` times with a short backoff. Each retry is counted and shown; a server that keeps
failing still fails (the last error is raised). Refusals (4xx) and dead servers (connect,
timeout) are not retried: the same request gets the same answer, or costs another timeout.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from gatekeeper.errors import EndpointError

T = TypeVar("T")

ATTEMPTS = 3
BACKOFF_S = 0.25  # then 0.5 s: at most 0.75 s spent waiting per request
TRANSIENT_STATUSES = (502, 503, 504)


def transient(e: EndpointError) -> bool:
    """Whether an answer is a passing server-side hiccup worth asking again (502/503/504)."""
    return e.kind == "http" and e.status in TRANSIENT_STATUSES


def with_retries(fn: Callable[[], T], retried: list[str], attempts: int = ATTEMPTS, backoff_s: float = BACKOFF_S) -> T:
    """`fn()`, tried again after a transient failure up to `attempts` times in all; each retried
    failure is appended to `retried` (what the report counts); the last failure is raised."""
    for attempt in range(attempts):
        try:
            return fn()
        except EndpointError as e:
            if not transient(e) or attempt == attempts - 1:
                raise
            retried.append(f"HTTP {e.status}: {e.detail}"[:200])
            time.sleep(backoff_s * 2 ** attempt)
    raise AssertionError("unreachable")  # the loop returns or raises
