"""The shared pair store: one PostgreSQL database that many mirroring proxies write and any of
them (or `gatekeeper shadow verdict`-style readers) judges. Selected by a `postgresql://` URL
wherever a store is named; the schema and its migrations are `postgres_schema.py`.

Writes. Pair rows are insert-only (`INSERT … ON CONFLICT (id) DO NOTHING`): replicas never update
a shared row, so N of them do not deadlock as UPDATE-based gateways do. Each replica batches its
pairs: `add` buffers, and the batch is committed when it holds `flush_pairs` pairs or its first
pair has waited `flush_interval_s` (a background thread), and on `close`. A replica killed with
SIGKILL therefore loses at most its unflushed batch — fewer than `flush_pairs` pairs, none older
than `flush_interval_s` — and never part of a pair: a batch is one transaction. `flush_pairs=1`
commits each pair before `add` returns, as the SQLite store does. A batch takes a
transaction-scoped advisory lock, so batches commit one at a time and `seq` grows in commit
order: a look that saw the pairs up to seq n finds every later pair after n (`last_seq`).
With batching, `add` cannot yet tell a duplicate id: it returns True, and the batch counts the
ids found already stored (`write_stats().duplicates`).

Outages. A batch that fails to commit (the server restarting, unreachable) is kept
(`pending.py`): `add` then only buffers, never raises and never waits for the database, and the
flush thread tries again every second (`RETRY_S`), reconnecting
outside the store's lock, so a connection attempt that hangs holds no `add` back. The buffer
holds at most `max_pending` pairs: beyond, the oldest are dropped, counted and logged.
`write_stats()` tells committed pairs from pending and dropped ones, and `failing` names the
error while pairs wait (`/metrics`: `store_degraded`). A batch whose commit reached the server
but whose answer did not is sent again: its ids are then found stored (duplicates, not twice).

Reads. Every read runs in a READ ONLY transaction, in chunks of seq; a store opened read-only
(judging) also sets the session read-only, so nothing it runs can write. The ROLLBACK latch is
one `meta` row every replica reads: the first ROLLBACK any replica judges is latched for all,
and one reset clears it for all; the latch and the slice order are changed under an advisory
lock. The measure cache is keyed by the measures' version, so replicas of two gatekeeper
versions do not read each other's measures.

Errors. psycopg is imported when a URL is opened (the `postgres` extra); without it, one line
names the extra. A malformed URL, an unreachable server, a refused login, a read-only role for a
writer, or a database that is not a store: a ConfigError (exit 3) naming the store with its
password masked; a failure after opening is a StoreError with the same masking.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from gatekeeper.json_types import JsonObject
from gatekeeper.errors import ConfigError, GatekeeperError
from gatekeeper.traffic.answers import Answer
from gatekeeper.traffic.format import TrafficRecord
from gatekeeper.traffic.store import postgres_schema as schema
from gatekeeper.traffic.store.codec import StoredPair, decode, encode, exported_pairs
from gatekeeper.traffic.store.interface import CACHED_OR_PAIR, MeasuredRow, NumberedPair, PairStore, WriteStats
from gatekeeper.traffic.store.pending import PendingPairs
from gatekeeper.traffic.store.location import masker, postgres_url, shown

_ROW = tuple[str, str, float, str, str, str, str | None]  # id, replica, stored_at, record, reference, candidate, twin
_INSERT = ("INSERT INTO pairs (id, replica, stored_at, record, reference, candidate, twin) "
           "SELECT id, replica, stored_at, record, reference, candidate, twin FROM unnest("
           "%s::text[], %s::text[], %s::float8[], %s::text[], %s::text[], %s::text[], %s::text[]) WITH ORDINALITY "
           "AS r(id, replica, stored_at, record, reference, candidate, twin, n) ORDER BY n ON CONFLICT (id) DO NOTHING")
_EXTRA = "a postgresql:// pair store needs psycopg: pip install 'gatekeeper[postgres]'"
RETRY_S = 1.0  # while commits fail, the pending pairs are tried again this often
LOG = logging.getLogger("gatekeeper.store")


class StoreError(GatekeeperError):
    """The PostgreSQL store failed after it was opened (the server went away, a write was refused)."""


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise ConfigError(_EXTRA) from None
    return psycopg


class PostgresStore(PairStore):
    """A pair store in a PostgreSQL database; safe to share between threads (one connection,
    one lock; the flush thread takes the same lock)."""

    def __init__(self, url: str, create: bool = True, readonly: bool = False, replica: str | None = None,
                 flush_pairs: int = 1, flush_interval_s: float = 1.0, max_pending: int = 10_000) -> None:
        self.name, self.readonly = shown(url), readonly
        self.replica = replica or socket.gethostname()
        self.flush_pairs, self.flush_interval_s = max(1, flush_pairs), flush_interval_s
        self.stored = self.duplicates = 0  # pairs a batch committed; ids it found already stored
        self._failing: str | None = None  # the last failed commit's error while pairs wait
        self._retry_at = 0.0
        self._mask = masker(url)
        self._psycopg = _psycopg()
        self._lock = threading.RLock()
        self._buffer: PendingPairs[_ROW] = PendingPairs(max(max_pending, self.flush_pairs), self.name)
        self._version = ""
        self._url = postgres_url(url)
        self._db = self._connect(self._url)
        try:
            self.created = schema.prepare(self._db, self.name, writer=create and not readonly)
            if not readonly:
                self._check_writable()
        except BaseException:
            self._db.close()
            raise
        self._stop = threading.Event()
        if not readonly:
            threading.Thread(target=self._flush_every, name="gatekeeper-store-flush", daemon=True).start()

    def _connect(self, url: str) -> Any:
        psycopg = self._psycopg
        try:
            db = psycopg.connect(url, autocommit=True, **({} if "connect_timeout" in url else {"connect_timeout": 10}))
            if self.readonly:
                db.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
            return db
        except psycopg.Error as e:
            raise ConfigError(f"cannot open the pair store: {self._said(e)}", self.name,
                              hint="check the URL's host, port, database, user and password (PGPASSWORD or ~/.pgpass "
                                   "keep it out of the URL)") from None

    def _said(self, e: BaseException) -> str:
        """A driver's error as one line, the password masked."""
        lines = [line.strip() for line in str(e).strip().splitlines() if line.strip()]
        return self._mask.text(lines[0] if lines else type(e).__name__)

    def _check_writable(self) -> None:
        """A writer refuses, at start, a server in recovery (a standby) or a role that may not insert pairs."""
        standby, insert = self._db.execute("SELECT pg_is_in_recovery(), has_table_privilege('pairs', 'INSERT')").fetchone()
        if standby or not insert:
            why = "the server is a read-only standby" if standby else "the role may not insert into its pairs table"
            raise ConfigError(f"cannot write to the pair store: {why}", self.name)

    def _failed(self, e: BaseException) -> StoreError:
        return StoreError(f"{self.name}: the pair store failed: {self._said(e)}")

    def _connected(self) -> Any:
        """The connection, opened again when the server ended the last one (a restart, a
        failover): the operation that found it broken failed, the next one reconnects."""
        if self._db.broken or self._db.closed:  # closed: the last attempt to reconnect failed
            self._db.close()
            try:
                self._db = self._connect(self._url)
            except ConfigError as e:
                raise StoreError(e.message if e.path is None else f"{e.path}: {e.message}") from None
        return self._db

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Rows of one query, in a READ ONLY transaction."""
        try:
            with self._lock, self._connected().transaction():
                self._db.execute("SET TRANSACTION READ ONLY")
                return list(self._db.execute(sql, params).fetchall())
        except self._psycopg.Error as e:
            raise self._failed(e) from None

    def _write(self, statements: Sequence[tuple[str, Sequence[Any]]], lock: int) -> list[Any]:
        """Run statements in one transaction holding advisory lock `lock`; each one's cursor result."""
        assert not self.readonly, "a read-only pair store is never written"
        try:
            with self._lock, self._connected().transaction():
                self._db.execute("SELECT pg_advisory_xact_lock(%s)", (lock,))
                return [self._db.execute(sql, params) for sql, params in statements]
        except self._psycopg.Error as e:
            raise self._failed(e) from None

    def close(self) -> None:
        """Commit the buffered pairs and close the connection; pairs that cannot be committed
        are a StoreError saying how many were lost (and a log line)."""
        if not self.readonly:
            self._stop.set()
        try:
            if not self.readonly and len(self._buffer):
                self.flush()
        except StoreError as e:
            LOG.warning("%s: closed with %d pair(s) not stored: %s", self.name, len(self._buffer), e)
            raise StoreError(f"{e}; {len(self._buffer)} pair(s) not stored") from None
        finally:
            with self._lock:
                self._db.close()

    def add(self, record: TrafficRecord, reference: Answer, candidate: Answer, twin: Answer | None) -> bool:
        """Store one pair: committed at once with `flush_pairs=1` (False: its id was already
        stored), else buffered (True) and committed with its batch. While commits fail the
        pair is only buffered (True): the flush thread commits it once the server is back."""
        row = self._row(record, reference, candidate, twin)
        with self._lock:
            self._buffer.append(row)
            if len(self._buffer) < self.flush_pairs or self._failing is not None:
                return True
            try:
                return self._flush() > 0 or self.flush_pairs > 1
            except StoreError:
                return True  # kept: the flush thread tries again

    def write_stats(self) -> WriteStats:
        """Committed, duplicate, pending and dropped pairs, and the error while commits fail."""
        with self._lock:
            return WriteStats(self.stored, self.duplicates, len(self._buffer), self._buffer.dropped, self._failing)

    def _row(self, record: TrafficRecord, reference: Answer, candidate: Answer, twin: Answer | None) -> _ROW:
        pair_id, record_text, ref_text, cand_text, twin_text = encode(record, reference, candidate, twin)
        return pair_id, self.replica, time.time(), record_text, ref_text, cand_text, twin_text

    def flush(self) -> None:
        """Commit the buffered batch now (kept for the next flush if the commit fails)."""
        with self._lock:
            self._flush()

    def _flush(self) -> int:
        rows = self._buffer.take()
        if not rows:
            return 0
        try:
            added = self._insert(rows)
        except StoreError as e:
            self._buffer.put_back(rows)
            if self._failing is None:
                LOG.warning("%s; %d pair(s) wait for a retry (at most %d, then the oldest are dropped)", e,
                            len(self._buffer), self._buffer.max_pending)
            self._failing, self._retry_at = str(e), time.monotonic() + RETRY_S
            raise
        if self._failing is not None:
            LOG.warning("%s: writing again (%d pair(s) dropped in all)", self.name, self._buffer.dropped)
        self._failing = None
        self._buffer.written()
        self.stored += added
        self.duplicates += len(rows) - added
        return added

    def _insert(self, rows: Sequence[_ROW]) -> int:
        """Insert rows in one transaction, in order, under the insert lock; how many were new."""
        columns = [list(c) for c in zip(*rows)]
        [cur] = self._write([(_INSERT, columns)], schema.INSERT_LOCK)
        return int(cur.rowcount)

    def _flush_every(self) -> None:
        """The flush thread: a batch whose first pair waited `flush_interval_s` is committed;
        while commits fail, the pending pairs are tried again every `RETRY_S` at most."""
        first: float | None = None
        while not self._stop.wait(min(self.flush_interval_s, 0.1)):
            if self._failing is not None:
                if time.monotonic() >= self._retry_at:
                    self._reconnect()
                    with self._lock:
                        try:
                            self._flush()
                        except StoreError:
                            pass  # kept; tried again after RETRY_S
                continue
            with self._lock:
                if not len(self._buffer):
                    first = None
                    continue
                first = first or time.monotonic()
                if time.monotonic() - first < self.flush_interval_s:
                    continue
                try:
                    self._flush()
                    first = None
                except StoreError:
                    pass  # kept; tried again after RETRY_S

    def _reconnect(self) -> None:
        """A new connection for a broken one, opened without the lock (a connection attempt to a
        server that does not answer takes up to its connect timeout: no `add` waits for it)."""
        if not (self._db.broken or self._db.closed) or self._stop.is_set():
            return
        try:
            fresh = self._connect(self._url)
        except ConfigError:
            return  # still unreachable: the flush that follows fails and says why
        with self._lock:
            old, self._db = self._db, fresh
            old.close()

    def latch(self, verdict: JsonObject) -> JsonObject:
        entry = json.dumps({"reason": verdict["reason"], "judged": verdict["judged"], "pairs": verdict["pairs"],
                            "at": time.time()})
        self._write([("INSERT INTO meta VALUES ('rollback', %s) ON CONFLICT (key) DO NOTHING", (entry,))], schema.META_LOCK)
        found = self.latched()
        assert found is not None
        return found

    def latched(self) -> JsonObject | None:
        rows = self._read("SELECT value FROM meta WHERE key = 'rollback'")
        return json.loads(rows[0][0]) if rows else None

    def reset_latch(self) -> JsonObject | None:
        [cur] = self._write([("DELETE FROM meta WHERE key = 'rollback' RETURNING value", ())], schema.META_LOCK)
        row = cur.fetchone()
        return json.loads(row[0]) if row else None

    def slice_order(self, keys: list[str]) -> tuple[list[str], int]:
        if self.readonly:  # what a writer would keep, kept nowhere
            rows = self._read("SELECT value FROM meta WHERE key = 'slice_order'")
            stored: dict[str, Any] = json.loads(rows[0][0]) if rows else {"order": [], "first": len(keys)}
            return [*stored["order"], *(k for k in keys if k not in stored["order"])], int(stored["first"])
        try:
            with self._lock, self._connected().transaction():
                self._db.execute("SELECT pg_advisory_xact_lock(%s)", (schema.META_LOCK,))
                row = self._db.execute("SELECT value FROM meta WHERE key = 'slice_order'").fetchone()
                known: dict[str, Any] = json.loads(row[0]) if row else {"order": [], "first": len(keys)}
                added = [k for k in keys if k not in known["order"]]
                if added or row is None:
                    known["order"] += added
                    self._db.execute("INSERT INTO meta VALUES ('slice_order', %s) ON CONFLICT (key) DO UPDATE "
                                     "SET value = excluded.value", (json.dumps(known),))
        except self._psycopg.Error as e:
            raise self._failed(e) from None
        return list(known["order"]), int(known["first"])

    def __len__(self) -> int:
        return int(self._read("SELECT COUNT(*) FROM pairs")[0][0])

    def rows(self) -> Iterator[StoredPair]:
        for i, (_, *row) in enumerate(self._chunks(0, self.last_seq(), False, 1000), 1):
            yield decode(self.name, i, *row)

    def last_seq(self) -> int:
        return int(self._read("SELECT COALESCE(MAX(seq), 0) FROM pairs")[0][0])

    def numbered_rows(self, after: int, upto: int, unmeasured: bool = False, chunk: int = 1000) -> Iterator[NumberedPair]:
        for seq, *row in self._chunks(after, upto, unmeasured, chunk):
            yield (seq, *decode(self.name, seq, *row))

    def _chunks(self, after: int, upto: int, unmeasured: bool, chunk: int) -> Iterator[tuple[Any, ...]]:
        """The rows (seq, id, record, reference, candidate, twin) with `after` < seq ≤ `upto`, a
        read-only transaction per `chunk`."""
        lacking = " AND NOT EXISTS (SELECT 1 FROM measured m WHERE m.version = %s AND m.seq = p.seq)" if unmeasured else ""
        while rows := self._read("SELECT seq, id, record, reference, candidate, twin FROM pairs p "
                                 f"WHERE seq > %s AND seq <= %s{lacking} ORDER BY seq LIMIT %s",
                                 (after, upto, *((self._version,) if unmeasured else ()), chunk)):
            yield from rows
            after = rows[-1][0]

    def measured_rows(self, after: int, upto: int, chunk: int = 1000) -> Iterator[MeasuredRow]:
        while rows := self._read(f"SELECT p.seq, m.data, {', '.join(CACHED_OR_PAIR)} FROM pairs p LEFT JOIN measured m ON "
                                 "m.version = %s AND m.seq = p.seq WHERE p.seq > %s AND p.seq <= %s ORDER BY p.seq LIMIT %s",
                                 (self._version, after, upto, chunk)):
            for seq, data, *row in rows:
                yield seq, data, None if data is not None else (seq, *decode(self.name, seq, *row))
            after = rows[-1][0]

    def use_measure_cache(self, version: str) -> None:
        """Use the cache rows of `version`; rows of other versions are removed (a mixed
        deployment measures again, never reads another version's measures). Read-only: the
        rows of `version` are read, nothing is removed."""
        self._version = version
        if self.readonly:
            return
        self._write([("DELETE FROM measured WHERE version <> %s", (version,))], schema.META_LOCK)

    def cached_measures(self, after: int, upto: int, chunk: int = 1000) -> Iterator[tuple[int, str]]:
        while rows := self._read("SELECT seq, data FROM measured WHERE version = %s AND seq > %s AND seq <= %s "
                                 "ORDER BY seq LIMIT %s", (self._version, after, upto, chunk)):
            yield from ((int(seq), str(data)) for seq, data in rows)
            after = rows[-1][0]

    def cache_measures(self, rows: Sequence[tuple[int, str]]) -> None:
        if not rows:
            return
        seqs, data = [s for s, _ in rows], [d for _, d in rows]
        self._write([("INSERT INTO measured SELECT %s, seq, data FROM unnest(%s::bigint[], %s::text[]) AS r(seq, data) "
                      "ON CONFLICT (version, seq) DO UPDATE SET data = excluded.data", (self._version, seqs, data))],
                    schema.META_LOCK)

    def import_files(self, paths: Sequence[str | Path]) -> list[tuple[int, int]]:
        """As `PairStore.import_files`: one transaction (under the insert lock: live replicas'
        batches wait for it), rows inserted a thousand at a time."""
        assert not self.readonly, "a read-only pair store is never written"
        counts = []
        try:
            with self._lock, self._connected().transaction():
                self._db.execute("SELECT pg_advisory_xact_lock(%s)", (schema.INSERT_LOCK,))
                for path in paths:
                    added = total = 0
                    batch: list[_ROW] = []
                    for pair in exported_pairs(path):
                        batch.append(self._row(*pair))
                        if len(batch) == 1000:
                            added += self._db.execute(_INSERT, [list(c) for c in zip(*batch)]).rowcount
                            total, batch = total + len(batch), []
                    if batch:
                        added += self._db.execute(_INSERT, [list(c) for c in zip(*batch)]).rowcount
                        total += len(batch)
                    counts.append((added, total - added))
        except self._psycopg.Error as e:
            raise self._failed(e) from None
        return counts

    def drop(self) -> None:
        """Remove the store's tables: an import that created the store and failed undoes it."""
        with self._lock:
            self._buffer.take()
            schema.drop(self._db)

