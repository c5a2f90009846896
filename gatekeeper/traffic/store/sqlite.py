"""The embedded pair store (the default): one SQLite file in WAL mode, one row per mirrored
request with its answers (`interface.py` says what a store holds, `codec.py` how a row is
encoded). Each pair is committed on its own, so a proxy killed with SIGKILL loses at most the
pair it was writing; WAL with `synchronous=NORMAL` keeps every committed transaction across a
process crash (only a power loss can take the last ones back).

Export and import go through the traffic format (docs/traffic-format.md, the `pair` key), so the
stores of several proxy hosts merge into one judgement (or into a PostgreSQL store, `postgres.py`):
import skips a request id it already holds. An import is all or nothing: one transaction over every file, rolled back on the first
bad line, and a store the import created is removed again (`import_pairs`).

The live proxy's verdict keeps each pair's measures once taken (`measured`, a table of its own
keyed by the pair's `seq`, created by `use_measure_cache` and emptied when the measures' version
changes: live/measured.py), so a `/verdict` measures only the pairs stored since the last one.
Nothing else reads or writes it; stores without it are as before.

Judging never writes. `SqliteStore.open_readonly` opens the file with `mode=ro`, and with
`immutable=1` when no `-wal` file lies beside it: a read-only open of a WAL database would
otherwise create `-wal` and `-shm` files and leave them behind. When a `-wal` file exists (a
proxy is writing, or was killed before its last checkpoint) its committed pairs are read; the
database file and the `-wal` file are left as they were, SQLite's `-shm` index may be rebuilt.

What is refused, as a ConfigError naming the file (exit code 3), by readers and writers alike
(a writer creates a store only in a missing or empty file):
- an empty file, a file that is not SQLite, another program's SQLite database: a store holds
  the `pairs` and `meta` tables with gatekeeper's columns and, in `meta`, the marker
  `gatekeeper_store` = the schema version, written when the store is created. Stores created
  before the marker existed (the tables and `schema` = 1 in `meta`, no marker) are accepted as
  they are: nothing adds the marker to them, so a judging or failed import leaves them unchanged;
- a store of another schema version;
- a file SQLite's `PRAGMA quick_check` finds damaged ("corrupted: ...");
- when read, a row whose record or answers are not valid JSON of the documented shape (the error
  names the pair id).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from gatekeeper.json_types import JsonObject
from gatekeeper.errors import ConfigError
from gatekeeper.traffic.answers import Answer
from gatekeeper.traffic.format import TrafficRecord
from gatekeeper.traffic.store.codec import StoredPair, decode, encode, exported_pairs
from gatekeeper.traffic.store.interface import HINT as _HINT
from gatekeeper.traffic.store.interface import CACHED_OR_PAIR, MARKER, SCHEMA_VERSION, MeasuredRow, NumberedPair, PairStore, WriteStats

_SCHEMA = f"""
BEGIN;
CREATE TABLE pairs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    stored_at REAL NOT NULL,
    record TEXT NOT NULL,
    reference TEXT NOT NULL,
    candidate TEXT NOT NULL,
    twin TEXT
);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta VALUES ('{MARKER}', '{SCHEMA_VERSION}'), ('schema', '{SCHEMA_VERSION}');
COMMIT;
"""
_COLUMNS = {"pairs": ("seq", "id", "stored_at", "record", "reference", "candidate", "twin"), "meta": ("key", "value")}
_SHAPE = " and ".join(f"{table}({', '.join(cols)})" for table, cols in _COLUMNS.items())
_SQLITE_HEADER = b"SQLite format 3\x00"


class SqliteStore(PairStore):
    """A pair store in a SQLite file; safe to share between threads (one connection, one lock).

    `SqliteStore(path)` opens it for writing, creating it when the file is missing or empty;
    `create=False` requires it to exist; `SqliteStore.open_readonly(path)` (judging) never writes."""

    def __init__(self, path: str | Path, create: bool = True, readonly: bool = False) -> None:
        self.path = Path(path)
        self.name = str(self.path)
        self.readonly = readonly
        exists = self.path.is_file()
        if self.path.is_dir():
            raise ConfigError(f"pair store {self.path} is a directory; name the store file (`gatekeeper shadow --store FILE`)")
        if (readonly or not create) and not exists:
            raise ConfigError(f"pair store {self.path} not found (a `gatekeeper shadow --store` file)")
        fresh = not exists or self.path.stat().st_size == 0
        if readonly or not fresh:
            db = _connect_readonly(self.path)
            try:
                _check(db, self.path)
            except BaseException:
                db.close()
                raise
            if readonly:
                self._db = db
            else:
                db.close()
        if not readonly:
            try:
                self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
                if fresh:
                    self._db.executescript(_SCHEMA)
            except sqlite3.DatabaseError as e:
                raise ConfigError(f"cannot open the pair store for writing ({e})", str(self.path)) from None
        self._lock = threading.Lock()
        self._stored = self._duplicates = 0
        self._cached = False  # the measure cache holds this gatekeeper's measures (`use_measure_cache`)

    @classmethod
    def open_readonly(cls, path: str | Path) -> SqliteStore:
        """An existing store, checked (marker, schema, `quick_check`) and opened read-only: what
        judging reads. The file and its directory are left as they were."""
        return cls(path, create=False, readonly=True)

    def close(self) -> None:
        """Close the connection (committed pairs are already on disk)."""
        with self._lock:
            self._db.close()

    def add(self, record: TrafficRecord, reference: Answer, candidate: Answer, twin: Answer | None) -> bool:
        """Store one pair (committed before returning); False when its id is already stored."""
        with self._lock:
            added = self._insert(record, reference, candidate, twin)
            self._stored, self._duplicates = self._stored + added, self._duplicates + (not added)
            return added

    def write_stats(self) -> WriteStats:
        """Each `add` commits before it returns: nothing is ever pending or dropped."""
        return WriteStats(stored=self._stored, duplicates=self._duplicates)

    def _insert(self, record: TrafficRecord, reference: Answer, candidate: Answer, twin: Answer | None) -> bool:
        assert not self.readonly, "a read-only pair store is never written"
        pair_id, *texts = encode(record, reference, candidate, twin)
        row = (pair_id, time.time(), *texts)
        cur = self._db.execute("INSERT OR IGNORE INTO pairs (id, stored_at, record, reference, candidate, twin) "
                               "VALUES (?, ?, ?, ?, ?, ?)", row)
        return cur.rowcount == 1

    def latch(self, verdict: JsonObject) -> JsonObject:
        """Remember the first ROLLBACK (its reason, judged pairs, time) and return what is latched:
        a live verdict that rolled back stays ROLLBACK until an operator resets it."""
        entry = json.dumps({"reason": verdict["reason"], "judged": verdict["judged"], "pairs": verdict["pairs"],
                            "at": time.time()})
        with self._lock:
            self._db.execute("INSERT OR IGNORE INTO meta VALUES ('rollback', ?)", (entry,))
        found = self.latched()
        assert found is not None
        return found

    def slice_order(self, keys: list[str]) -> tuple[list[str], int]:
        """The slices in the order the live verdict first judged them, with `keys` (this
        judgement's) appended where new, and how many the first judgement had: the alpha split is
        fixed then, later slices draw on a reserve (live/verdict.py). Read-only: nothing is kept."""
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key='slice_order'").fetchone()
            known: dict[str, Any] = json.loads(row[0]) if row else {"order": [], "first": len(keys)}
            added = [k for k in keys if k not in known["order"]]
            known["order"] += added
            if (added or row is None) and not self.readonly:
                self._db.execute("INSERT OR REPLACE INTO meta VALUES ('slice_order', ?)", (json.dumps(known),))
        return list(known["order"]), int(known["first"])

    def latched(self) -> JsonObject | None:
        """The latched ROLLBACK, or None."""
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key='rollback'").fetchone()
        return json.loads(row[0]) if row else None

    def reset_latch(self) -> JsonObject | None:
        """Clear a latched ROLLBACK (an operator's decision); returns what was latched."""
        found = self.latched()
        with self._lock:
            self._db.execute("DELETE FROM meta WHERE key='rollback'")
        return found

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM pairs").fetchone()[0])

    def rows(self) -> Iterator[StoredPair]:
        """Every stored pair in the order it was stored: (record, reference, candidate, twin). A row
        that is not a valid pair is a ConfigError naming the store and the pair id."""
        try:
            with self._lock:
                rows = self._db.execute("SELECT id, record, reference, candidate, twin FROM pairs ORDER BY seq").fetchall()
        except sqlite3.DatabaseError as e:
            raise ConfigError(f"corrupted: {e}", str(self.path), hint=_HINT) from None
        for i, row in enumerate(rows, 1):
            yield decode(self.name, i, *row)

    def last_seq(self) -> int:
        """The `seq` of the last pair stored (0: none). Pairs are numbered in the order they are
        committed, so the pairs after a look that saw up to n are those with seq > n."""
        with self._lock:
            return int(self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM pairs").fetchone()[0])

    def numbered_rows(self, after: int, upto: int, unmeasured: bool = False, chunk: int = 1000) -> Iterator[NumberedPair]:
        """The pairs with `after` < seq ≤ `upto` in stored order, each with its seq (also the
        record's line); `unmeasured`: only those the measure cache lacks. Read `chunk` rows at a
        time, so a writer waits for one chunk at most."""
        lacking = " AND seq NOT IN (SELECT seq FROM measured)" if unmeasured and self._cached else ""
        while True:
            try:
                with self._lock:
                    rows = self._db.execute("SELECT seq, id, record, reference, candidate, twin FROM pairs "
                                            f"WHERE seq > ? AND seq <= ?{lacking} ORDER BY seq LIMIT ?",
                                            (after, upto, chunk)).fetchall()
            except sqlite3.DatabaseError as e:
                raise ConfigError(f"corrupted: {e}", str(self.path), hint=_HINT) from None
            if not rows:
                return
            for seq, *row in rows:
                yield (seq, *decode(self.name, seq, *row))
            after = rows[-1][0]

    def measured_rows(self, after: int, upto: int, chunk: int = 1000) -> Iterator[MeasuredRow]:
        """As `PairStore.measured_rows`: a LEFT JOIN of the pairs and the measure cache per chunk."""
        join, cols = (" LEFT JOIN measured m ON m.seq = p.seq", ", ".join(CACHED_OR_PAIR)) if self._cached else \
            ("", "p.id, p.record, p.reference, p.candidate, p.twin")
        while True:
            try:
                with self._lock:
                    rows = self._db.execute(f"SELECT p.seq, {'m.data' if join else 'NULL'}, {cols} FROM pairs p{join} "
                                            "WHERE p.seq > ? AND p.seq <= ? ORDER BY p.seq LIMIT ?", (after, upto, chunk)).fetchall()
            except sqlite3.DatabaseError as e:
                raise ConfigError(f"corrupted: {e}", str(self.path), hint=_HINT) from None
            if not rows:
                return
            for seq, data, *row in rows:
                yield seq, data, None if data is not None else (seq, *decode(self.name, seq, *row))
            after = rows[-1][0]

    def use_measure_cache(self, version: str) -> None:
        """Create the measure cache when missing, and empty it when it holds measures of another
        `version` (a gatekeeper whose measures changed measures every pair again). Read-only: the
        cache is read if it holds `version`'s measures, and is otherwise as good as empty."""
        if self.readonly:
            with self._lock:
                has = self._db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='measured'").fetchone()
                row = self._db.execute("SELECT value FROM meta WHERE key='measured_version'").fetchone()
            self._cached = has is not None and row is not None and row[0] == version
            return
        self._cached = True
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute("CREATE TABLE IF NOT EXISTS measured (seq INTEGER PRIMARY KEY, data TEXT NOT NULL)")
                row = self._db.execute("SELECT value FROM meta WHERE key='measured_version'").fetchone()
                if row is None or row[0] != version:
                    self._db.execute("DELETE FROM measured")
                    self._db.execute("INSERT OR REPLACE INTO meta VALUES ('measured_version', ?)", (version,))
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def cached_measures(self, after: int, upto: int, chunk: int = 1000) -> Iterator[tuple[int, str]]:
        """The measure cache's rows (seq, data) with `after` < seq ≤ `upto`, in stored order."""
        while self._cached:
            with self._lock:
                rows = self._db.execute("SELECT seq, data FROM measured WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?",
                                        (after, upto, chunk)).fetchall()
            if not rows:
                return
            yield from rows
            after = rows[-1][0]

    def cache_measures(self, rows: Sequence[tuple[int, str]]) -> None:
        """Keep pairs' measures (seq, data), in one transaction."""
        assert not self.readonly, "a read-only pair store is never written"
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany("INSERT OR REPLACE INTO measured VALUES (?, ?)", rows)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def import_files(self, paths: Sequence[str | Path]) -> list[tuple[int, int]]:
        """Add the pairs of exported traffic files, per file (added, already held), in one
        transaction: a line without a `pair` key, or with a malformed one, is a ConfigError naming
        file and line, and nothing of any file is added."""
        counts = []
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                for path in paths:
                    added = held = 0
                    for record, ref, cand, twin in exported_pairs(path):
                        if self._insert(record, ref, cand, twin):
                            added += 1
                        else:
                            held += 1
                    counts.append((added, held))
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
        return counts


def import_pairs(store_path: str | Path, paths: Sequence[str | Path]) -> tuple[list[tuple[int, int]], int]:
    """`gatekeeper pairs import`: add the pairs of `paths` to the store (created if missing),
    all or nothing; per file (added, already held), and the pairs the store then holds. On any
    failure the store is as it was, and a store this call created is removed."""
    target = Path(store_path)
    size = target.stat().st_size if target.is_file() else None
    sidecars = [target.with_name(target.name + s) for s in ("-wal", "-shm", "-journal")]
    new_sidecars = [p for p in sidecars if not p.exists()]
    store = SqliteStore(target)
    try:
        counts = store.import_files(paths)
        return counts, len(store)
    except BaseException:
        store.close()
        if not size:  # the store was created here (in no file, or in an empty one): undone
            for p in new_sidecars:
                p.unlink(missing_ok=True)
            if size is None:
                target.unlink(missing_ok=True)
            else:
                target.write_bytes(b"")
        raise
    finally:
        store.close()


def _connect_readonly(path: Path) -> sqlite3.Connection:
    """A read-only connection that creates no file: `immutable=1` unless a `-wal` file holds
    pairs a writer committed (then plain `mode=ro` reads them)."""
    from urllib.parse import quote

    wal = path.with_name(path.name + "-wal").exists()
    uri = f"file:{quote(str(path.resolve()))}?mode=ro" + ("" if wal else "&immutable=1")
    try:
        return sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
    except sqlite3.DatabaseError as e:
        raise ConfigError(f"cannot open the pair store ({e})", str(path)) from None


def _check(db: sqlite3.Connection, path: Path) -> None:
    """Refuse a file that is not a gatekeeper store of this schema, or that SQLite finds damaged."""
    with open(path, "rb") as f:
        head = f.read(len(_SQLITE_HEADER))
    if not head:
        raise ConfigError("not a pair store: the file is empty", str(path), hint=_HINT)
    if head != _SQLITE_HEADER:
        raise ConfigError("not a pair store: not an SQLite database", str(path), hint=_HINT)
    try:
        names = sorted(str(n) for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'"))
        tables = {name: tuple(col[1] for col in db.execute(f"PRAGMA table_info({name})")) for name in _COLUMNS if name in names}
        if tables != _COLUMNS:
            found = f"tables {', '.join(names[:8])}" if names else "no table"
            raise ConfigError(f"not a pair store: another SQLite database ({found}; a store has {_SHAPE})",
                              str(path), hint=_HINT)
        meta = dict(db.execute("SELECT key, value FROM meta WHERE key IN (?, 'schema')", (MARKER,)).fetchall())
        version = meta.get(MARKER, meta.get("schema"))
        if version is None:
            raise ConfigError(f"not a pair store: no {MARKER!r} marker in its meta table", str(path), hint=_HINT)
        if version != str(SCHEMA_VERSION):
            raise ConfigError(f"pair store of schema {version}; this gatekeeper reads schema {SCHEMA_VERSION}", str(path))
        problems = [row[0] for row in db.execute("PRAGMA quick_check(5)")]
    except sqlite3.DatabaseError as e:
        raise ConfigError(f"corrupted: {e}", str(path), hint="SQLite cannot read it") from None
    if problems != ["ok"]:
        raise ConfigError(f"corrupted: {'; '.join(str(p) for p in problems)[:300]}", str(path),
                          hint="SQLite's quick_check fails on it")
