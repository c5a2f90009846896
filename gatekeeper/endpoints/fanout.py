"""The one fan-out helper: a function over items on a few threads, results in order.

Gates, the noise floor and baseline recording all send many independent requests; they go
through `fan_out`, so the rule is the same everywhere: an EndpointError is a result (the item's
answer is that failure), never an exception that costs the other items.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from gatekeeper.errors import EndpointError

T = TypeVar("T")
R = TypeVar("R")


def fan_out(fn: Callable[[T], R], items: Sequence[T], concurrency: int) -> list[R | EndpointError]:
    """fn over items on `concurrency` threads (in order on this thread when it is 1 or less);
    results in the items' order, an EndpointError returned in place of its item's result."""

    def safe(item: T) -> R | EndpointError:
        try:
            return fn(item)
        except EndpointError as e:
            return e

    if concurrency <= 1:
        return [safe(i) for i in items]
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        return list(pool.map(safe, items))


def raise_first(results: Sequence[R | EndpointError]) -> list[R]:
    """The results of a fan-out whose every item is needed: the first EndpointError is raised."""
    for r in results:
        if isinstance(r, EndpointError):
            raise r
    return list(results)  # type: ignore[arg-type]  # no EndpointError is left
