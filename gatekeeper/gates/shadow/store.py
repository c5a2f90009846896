"""The pair store: SQLite in WAL mode, one row per mirrored request with its answers.

A row is a traffic record (the request, its tenant, model alias and time) and the pair: the
reference's answer (the primary's, or a replica's in mirror-sink mode), the candidate's (the
shadow's) and the twin (a replica of the reference: the noise floor), as `Answer.to_dict`
holds them. Each pair is committed on its own, so a proxy killed with SIGKILL loses at most the
pair it was writing; WAL with `synchronous=NORMAL` keeps every committed transaction across a
process crash (only a power loss can take the last ones back).

Export and import go through the traffic format (docs/traffic-format.md, the `pair` key), so the
stores of several proxy hosts merge into one judgement: import skips a request id it already
holds.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from gatekeeper.errors import ConfigError
from gatekeeper.gates.shadow.answers import Answer
from gatekeeper.gates.shadow.measures import Pair
from gatekeeper.traffic.format import TrafficRecord, iter_records, parse_record

SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS pairs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    stored_at REAL NOT NULL,
    record TEXT NOT NULL,
    reference TEXT NOT NULL,
    candidate TEXT NOT NULL,
    twin TEXT
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


class PairStore:
    """A pair store on disk; safe to share between threads (one connection, one lock)."""

    def __init__(self, path: str | Path, create: bool = True) -> None:
        self.path = Path(path)
        if not create and not self.path.is_file():
            raise ConfigError(f"pair store {self.path} not found (a `gatekeeper shadow --store` file)")
        try:
            self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
            found = self._db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            if found is None:
                self._db.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
            elif found[0] != str(SCHEMA_VERSION):
                raise ConfigError(f"pair store {self.path} has schema {found[0]}; this gatekeeper reads {SCHEMA_VERSION}")
        except sqlite3.DatabaseError as e:
            raise ConfigError(f"{self.path} is not a pair store ({e})") from None
        self._lock = threading.Lock()

    def close(self) -> None:
        """Close the connection (committed pairs are already on disk)."""
        with self._lock:
            self._db.close()

    def add(self, record: TrafficRecord, reference: Answer, candidate: Answer, twin: Answer | None) -> bool:
        """Store one pair (committed before returning); False when its id is already stored."""
        row = (record.id, time.time(), json.dumps(record.to_json()), json.dumps(reference.to_dict()),
               json.dumps(candidate.to_dict()), None if twin is None else json.dumps(twin.to_dict()))
        with self._lock:
            cur = self._db.execute("INSERT OR IGNORE INTO pairs (id, stored_at, record, reference, candidate, twin) "
                                   "VALUES (?, ?, ?, ?, ?, ?)", row)
            return cur.rowcount == 1

    def latch(self, verdict: dict[str, Any]) -> dict[str, Any]:
        """Remember the first ROLLBACK (its reason, judged pairs, time) and return what is latched:
        a live verdict that rolled back stays ROLLBACK until an operator resets it."""
        entry = json.dumps({"reason": verdict["reason"], "judged": verdict["judged"], "pairs": verdict["pairs"],
                            "at": time.time()})
        with self._lock:
            self._db.execute("INSERT OR IGNORE INTO meta VALUES ('rollback', ?)", (entry,))
        found = self.latched()
        assert found is not None
        return found

    def latched(self) -> dict[str, Any] | None:
        """The latched ROLLBACK, or None."""
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key='rollback'").fetchone()
        return json.loads(row[0]) if row else None

    def reset_latch(self) -> dict[str, Any] | None:
        """Clear a latched ROLLBACK (an operator's decision); returns what was latched."""
        found = self.latched()
        with self._lock:
            self._db.execute("DELETE FROM meta WHERE key='rollback'")
        return found

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM pairs").fetchone()[0])

    def rows(self) -> Iterator[tuple[TrafficRecord, Answer, Answer, Answer | None]]:
        """Every stored pair in the order it was stored: (record, reference, candidate, twin)."""
        with self._lock:
            rows = self._db.execute("SELECT record, reference, candidate, twin FROM pairs ORDER BY seq").fetchall()
        for i, (record, ref, cand, twin) in enumerate(rows, 1):
            yield (parse_record(json.loads(record), i), Answer.from_dict(json.loads(ref)), Answer.from_dict(json.loads(cand)),
                   Answer.from_dict(json.loads(twin)) if twin is not None else None)

    def export(self, path: str | Path) -> int:
        """Write every pair as a traffic file with `pair` keys (atomically); the number written."""
        from gatekeeper.report.atomic import write_atomic

        lines = [json.dumps({**record.to_json(), "pair": _pair_json(ref, cand, twin)})
                 for record, ref, cand, twin in self.rows()]
        write_atomic(Path(path), "".join(line + "\n" for line in lines))
        return len(lines)

    def import_file(self, path: str | Path) -> tuple[int, int]:
        """Add the pairs of an exported traffic file: (added, already held). A line without a
        `pair` key, or with a malformed one, is a ConfigError naming file and line."""
        added = held = 0
        for record in iter_records(path):
            pair = record.pair
            if pair is None:
                raise ConfigError("no stored pair on this line (a `pair` key with `reference` and `candidate` answers; "
                                  "`gatekeeper pairs export` writes them)", str(path), record.line, "pair")
            twin = pair.get("twin")
            if self.add(replace(record, pair=None), Answer.from_dict(pair["reference"]), Answer.from_dict(pair["candidate"]),
                        Answer.from_dict(twin) if isinstance(twin, dict) else None):
                added += 1
            else:
                held += 1
        return added, held


def _pair_json(ref: Answer, cand: Answer, twin: Answer | None) -> dict[str, Any]:
    return {"reference": ref.to_dict(), "candidate": cand.to_dict(), "twin": twin.to_dict() if twin else None}


def wants_json(record: TrafficRecord) -> bool:
    """Whether the request asked for JSON (`response_format` json_object / json_schema)."""
    fmt = record.request.get("response_format")
    return isinstance(fmt, dict) and fmt.get("type") in ("json_object", "json_schema")


def pair_of(record: TrafficRecord, ref: Answer, cand: Answer, twin: Answer | None) -> Pair:
    """The pair gate 5 measures for one request and its answers (replayed or stored)."""
    req = record.request
    return Pair(record.id, record.tenant, record.kind, record.model_alias, wants_json(record),
                tuple(req["tools"]) if req.get("tools") else None, cand, ref, twin, record.sampled,
                bool(req.get("logprobs")))


def pairs(store: PairStore) -> Iterable[Pair]:
    """Every stored pair as gate 5 measures it."""
    return (pair_of(*row) for row in store.rows())
