"""The pair store, by name: `open_store(name)` opens a `postgresql://` URL as the shared
PostgreSQL store (`postgres.py`, the `postgres` extra) and anything else as a SQLite file
(`sqlite.py`, the default: no server needed). What a store holds and offers is `interface.py`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gatekeeper.traffic.store.interface import MARKER, SCHEMA_VERSION, PairStore, WriteStats
from gatekeeper.traffic.store.location import is_postgres, shown
from gatekeeper.traffic.store.sqlite import SqliteStore

__all__ = ["MARKER", "SCHEMA_VERSION", "PairStore", "WriteStats", "SqliteStore", "Batching", "open_store", "import_pairs", "shown",
           "is_postgres"]


@dataclass(frozen=True)
class Batching:
    """How a PostgreSQL store batches its writes (`gatekeeper shadow --flush-pairs/--flush-interval/
    --max-pending`): a batch is committed at `pairs` pairs or when its first pair has waited
    `interval_s`; while commits fail, at most `max_pending` pairs wait for a retry (beyond, the
    oldest are dropped and counted: `pending.py`). The SQLite store commits each pair."""

    pairs: int = 1
    interval_s: float = 1.0
    max_pending: int = 10_000


def open_store(name: str | Path, readonly: bool = False, create: bool = True, replica: str | None = None,
               batching: Batching = Batching()) -> PairStore:
    """The store `name` names, checked: read-only (judging: nothing is written), or for writing
    (created where there is none yet unless `create` is False). `replica` names the proxy whose
    pairs a PostgreSQL store records (default: the host name)."""
    text = str(name)
    if is_postgres(text):
        from gatekeeper.traffic.store.postgres import PostgresStore

        return PostgresStore(text, create=create, readonly=readonly, replica=replica, flush_pairs=batching.pairs,
                             flush_interval_s=batching.interval_s, max_pending=batching.max_pending)
    return SqliteStore(name, create=create, readonly=readonly)


def import_pairs(name: str | Path, paths: Sequence[str | Path]) -> tuple[list[tuple[int, int]], int]:
    """`gatekeeper pairs import`: add the pairs of `paths` to the store `name` (created if
    missing), all or nothing; per file (added, already held), and the pairs the store then
    holds. On any failure the store is as it was, and a store this call created is removed."""
    if is_postgres(str(name)):
        from gatekeeper.traffic.store.postgres import PostgresStore

        store = PostgresStore(str(name), replica="import")
        try:
            return store.import_files(paths), len(store)
        except BaseException:
            if store.created:  # a store this import created is dropped again
                store.drop()
            raise
        finally:
            store.close()
    from gatekeeper.traffic.store import sqlite

    return sqlite.import_pairs(name, paths)
