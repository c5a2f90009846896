"""The pairs a PostgreSQL writer holds until they are committed: its batch, and while the server
cannot be reached (a restart, a failover, a network cut) the batches that failed, kept for the
next try — up to `max_pending` pairs, never more.

Beyond the bound the oldest pairs are dropped: a long outage costs the pairs from its start and
keeps the newest, which a verdict taken once the server is back judges first. Each drop is
counted (`dropped`, `/metrics` `gatekeeper_shadow_store_dropped_total`) and logged on the
`gatekeeper.store` logger — at the first drop since the store last wrote, then at most every
`LOG_EVERY_S` seconds with the running total:

    gatekeeper.store: postgresql://***@db/shadow: 1 pair(s) dropped unstored (10000 pending: the
    retry buffer is full while commits fail; 1 dropped in all)

Memory is bounded by `max_pending` pairs of the sizes mirrored (a pair is its request and three
answers as JSON: a few KB for chat, more for long completions); docs/shadow-live.md gives figures.
Not thread-safe: the store calls it under its lock.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Sequence
from typing import Generic, TypeVar

LOG = logging.getLogger("gatekeeper.store")
LOG_EVERY_S = 10.0

Row = TypeVar("Row")


class PendingPairs(Generic[Row]):
    """Rows waiting to be committed, oldest first, at most `max_pending` of them."""

    def __init__(self, max_pending: int, name: str) -> None:
        assert max_pending >= 1, "the retry buffer holds at least one pair"
        self.max_pending, self.name = max_pending, name
        self.dropped = 0  # rows dropped unstored, in all
        self._rows: deque[Row] = deque()
        self._unlogged = 0  # drops not yet in a log line
        self._logged_at: float | None = None  # None: no drop since the store last wrote

    def __len__(self) -> int:
        return len(self._rows)

    def append(self, row: Row) -> None:
        """Hold one more row; the oldest goes when the buffer is full."""
        self._rows.append(row)
        self._bound()

    def take(self) -> list[Row]:
        """Every row held, oldest first; the buffer is then empty."""
        rows = list(self._rows)
        self._rows.clear()
        return rows

    def put_back(self, rows: Sequence[Row]) -> None:
        """Rows whose commit failed, back before the ones held since (kept in their order); the
        oldest go when the buffer is full."""
        self._rows.extendleft(reversed(rows))
        self._bound()

    def written(self) -> None:
        """A commit succeeded: the next drop starts a new outage's log lines."""
        self._logged_at = None

    def _bound(self) -> None:
        excess = len(self._rows) - self.max_pending
        for _ in range(max(0, excess)):
            self._rows.popleft()
        if excess > 0:
            self.dropped += excess
            self._unlogged += excess
            now = time.monotonic()
            if self._logged_at is None or now - self._logged_at >= LOG_EVERY_S:
                LOG.warning("%s: %d pair(s) dropped unstored (%d pending: the retry buffer is full while commits fail; "
                            "%d dropped in all)", self.name, self._unlogged, len(self._rows), self.dropped)
                self._logged_at, self._unlogged = now, 0
