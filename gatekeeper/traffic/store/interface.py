"""What a pair store is: the interface both backends implement (`sqlite.py`, the embedded
default; `postgres.py`, one store shared by many proxy replicas), and what their users — the
mirror, the live verdict, gate 5's `--shadow-store`, `gatekeeper pairs` — may call.

A pair store holds one row per mirrored request: the traffic record and the reference's,
candidate's and twin's answers (`codec.py`), numbered by `seq` in the order they were committed,
never updated or removed. Beside the pairs it keeps three small things for the live verdict: the
ROLLBACK latch (one entry: a ROLLBACK stays until an operator resets it), the order in which the
live verdict first met its slices (its alpha split), and the measure cache (each pair's measures,
keyed by seq and the measures' version: `live/measured.py`).

A store opened read-only (judging: `open_store(name, readonly=True)`) never writes; a writer
creates the store only where there is none yet (a missing or empty file, an empty database),
and every opening refuses what is not a gatekeeper store of this schema, as a ConfigError naming
the store (a URL's password masked).
"""

from __future__ import annotations

import abc
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from gatekeeper.json_types import JsonObject
from gatekeeper.traffic.answers import Answer
from gatekeeper.traffic.format import TrafficRecord
from gatekeeper.traffic.store.codec import StoredPair, exported_line

SCHEMA_VERSION = 1
MARKER = "gatekeeper_store"
"""The meta key that makes a file or database a gatekeeper pair store; its value is the schema version."""
HINT = "a pair store is what `gatekeeper shadow --store` or `gatekeeper pairs import --store` writes"

NumberedPair = tuple[int, TrafficRecord, Answer, Answer, Answer | None]
"""(seq, record, reference, candidate, twin)."""
MeasuredRow = tuple[int, str | None, NumberedPair | None]
"""(seq, measure cache data, None) for a measured pair, else (seq, None, the pair)."""
CACHED_OR_PAIR = ("CASE WHEN m.data IS NULL THEN p.id END", "CASE WHEN m.data IS NULL THEN p.record END",
                  "CASE WHEN m.data IS NULL THEN p.reference END", "CASE WHEN m.data IS NULL THEN p.candidate END",
                  "CASE WHEN m.data IS NULL THEN p.twin END")
"""The pair's columns of a `measured_rows` query, read only where the cache (`m`) lacks it."""


@dataclass(frozen=True)
class WriteStats:
    """What a writer's `add`s have become so far, as `/metrics` and `/verdict` report them.

    `stored`: pairs this writer committed (new ids only); `duplicates`: ids a commit found
    already stored; `pending`: pairs buffered, not yet committed (a SIGKILL loses them);
    `dropped`: pairs dropped unstored because the retry buffer was full while commits failed
    (oldest first); `failing`: the last failed commit's error while pairs wait for a retry
    (None: the store is writing)."""

    stored: int = 0
    duplicates: int = 0
    pending: int = 0
    dropped: int = 0
    failing: str | None = None


class PairStore(abc.ABC):
    """A pair store, open for reading (`readonly`) or writing; safe to share between threads.

    `name` is what messages call it: the file's path, or the URL with its password masked."""

    name: str
    readonly: bool

    @abc.abstractmethod
    def close(self) -> None:
        """Write what is buffered and close (committed pairs are already stored)."""

    def flush(self) -> None:  # noqa: B027 — a store that commits each pair has nothing to flush
        """Commit the pairs `add` buffered."""

    @abc.abstractmethod
    def add(self, record: TrafficRecord, reference: Answer, candidate: Answer, twin: Answer | None) -> bool:
        """Store one pair; False when its id is already stored. A store that batches its writes
        returns True once the pair is buffered, and counts the ids found already stored when the
        batch is committed (see the backend)."""

    @abc.abstractmethod
    def write_stats(self) -> WriteStats:
        """What this writer's `add`s have become: committed, duplicate, pending, dropped."""

    @abc.abstractmethod
    def __len__(self) -> int:
        """The pairs stored (committed)."""

    @abc.abstractmethod
    def rows(self) -> Iterator[StoredPair]:
        """Every stored pair in the order it was stored; a row that is not a valid pair is a
        ConfigError naming the store and the pair id."""

    @abc.abstractmethod
    def last_seq(self) -> int:
        """The `seq` of the last pair stored (0: none). Pairs are numbered in the order they are
        committed, so the pairs after a look that saw up to n are those with seq > n."""

    @abc.abstractmethod
    def numbered_rows(self, after: int, upto: int, unmeasured: bool = False, chunk: int = 1000) -> Iterator[NumberedPair]:
        """The pairs with `after` < seq ≤ `upto` in stored order, each with its seq (also the
        record's line); `unmeasured`: only those the measure cache lacks. Read `chunk` rows at a
        time, so a writer waits for one chunk at most."""

    @abc.abstractmethod
    def measured_rows(self, after: int, upto: int, chunk: int = 1000) -> Iterator[MeasuredRow]:
        """The pairs with `after` < seq ≤ `upto` in stored order, each as (seq, its measure cache
        data, None) where the cache holds it, else (seq, None, the pair): one query per `chunk`,
        so no pair is missed or read twice while writers fill the cache. What a judgement that
        writes no cache reads (`gatekeeper shadow verdict`: the replicas' measures, reused)."""

    @abc.abstractmethod
    def latch(self, verdict: JsonObject) -> JsonObject:
        """Remember the first ROLLBACK (its reason, judged pairs, time) and return what is
        latched: a live verdict that rolled back stays ROLLBACK until an operator resets it."""

    @abc.abstractmethod
    def latched(self) -> JsonObject | None:
        """The latched ROLLBACK, or None."""

    @abc.abstractmethod
    def reset_latch(self) -> JsonObject | None:
        """Clear a latched ROLLBACK (an operator's decision); returns what was latched."""

    @abc.abstractmethod
    def slice_order(self, keys: list[str]) -> tuple[list[str], int]:
        """The slices in the order the live verdict first judged them, with `keys` (this
        judgement's) appended where new, and how many the first judgement had: the alpha split is
        fixed then, later slices draw on a reserve (live/verdict.py). A read-only store keeps
        nothing: it returns the order a writer would keep (`gatekeeper shadow verdict`)."""

    @abc.abstractmethod
    def use_measure_cache(self, version: str) -> None:
        """Use the measure cache of the measures' `version` (`live/measured.py`); measures of
        another version are not read (a gatekeeper whose measures changed measures again). A
        read-only store reads the cache as it is (nothing created or removed)."""

    @abc.abstractmethod
    def cached_measures(self, after: int, upto: int, chunk: int = 1000) -> Iterator[tuple[int, str]]:
        """The measure cache's rows (seq, data) with `after` < seq ≤ `upto`, in stored order."""

    @abc.abstractmethod
    def cache_measures(self, rows: Sequence[tuple[int, str]]) -> None:
        """Keep pairs' measures (seq, data), in one transaction."""

    @abc.abstractmethod
    def import_files(self, paths: Sequence[str | Path]) -> list[tuple[int, int]]:
        """Add the pairs of exported traffic files, per file (added, already held), in one
        transaction: a line without a `pair` key, or with a malformed one, is a ConfigError naming
        file and line, and nothing of any file is added."""

    def import_file(self, path: str | Path) -> tuple[int, int]:
        """Add the pairs of an exported traffic file: (added, already held); see `import_files`."""
        return self.import_files([path])[0]

    def export(self, path: str | Path) -> int:
        """Write every pair as a traffic file with `pair` keys (atomically); the number written."""
        from gatekeeper.atomic import write_atomic

        lines = [exported_line(*row) for row in self.rows()]
        write_atomic(Path(path), "".join(line + "\n" for line in lines))
        return len(lines)

    def __enter__(self) -> PairStore:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
