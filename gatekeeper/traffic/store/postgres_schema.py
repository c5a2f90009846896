"""The PostgreSQL pair store's schema: its migrations, and the checks that refuse a database
that is not a gatekeeper store of a schema this gatekeeper reads.

The tables live in the connection's current schema (`public` unless the URL sets `search_path`,
e.g. `?options=-csearch_path%3Dgatekeeper`):
- `schema_version(version, applied_at)`: one row per migration applied; the highest is the
  store's schema. Migration 1 creates everything below. A writer applies the migrations a store
  lacks, under an advisory lock (two replicas starting at once migrate once); a reader only
  checks, and refuses a store older or newer than this gatekeeper's schema.
- `meta(key, value)`: the marker `gatekeeper_store` (written by migration 1), the ROLLBACK latch
  (`rollback`, one row for every replica) and the live verdict's slice order (`slice_order`).
- `pairs(seq, id, replica, stored_at, record, reference, candidate, twin)`: insert-only, one row
  per pair; `seq` an identity, `id` unique (a request mirrored twice, or imported again, is
  stored once), `replica` the proxy that stored it; record and answers are `codec.py`'s JSON text.
- `measured(version, seq, data)`: the live verdict's measure cache, keyed by the measures'
  version and the pair's seq (`live/measured.py`).

What is refused, as a ConfigError naming the store (exit code 3): a database with tables but
no gatekeeper store in its current schema (another program's), a store without the marker or
with other columns, one of a newer schema (written by a newer gatekeeper), and — read-only —
one of an older schema (a writer migrates it). PostgreSQL keeps its own pages consistent (WAL;
page checksums where the cluster enables them), so there is no `quick_check` here: a row that is
not a valid pair is refused when it is read (`codec.decode`), as in SQLite.
"""

from __future__ import annotations

from typing import Any

from gatekeeper.errors import ConfigError
from gatekeeper.traffic.store.interface import HINT, MARKER

SCHEMA_LOCK, INSERT_LOCK, META_LOCK = 0x676B_0001, 0x676B_0002, 0x676B_0003
"""Advisory lock keys (per database): migrating; inserting pairs (so `seq` is committed in order);
the latch and the slice order (read, then written)."""

MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())",
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        "CREATE TABLE pairs (seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, id TEXT NOT NULL UNIQUE, "
        "replica TEXT NOT NULL, stored_at DOUBLE PRECISION NOT NULL, record TEXT NOT NULL, reference TEXT NOT NULL, "
        "candidate TEXT NOT NULL, twin TEXT)",
        "CREATE TABLE measured (version TEXT NOT NULL, seq BIGINT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (version, seq))",
        f"INSERT INTO meta VALUES ('{MARKER}', '1')",
    ),
}
LATEST = max(MIGRATIONS)

COLUMNS = {"schema_version": ("version", "applied_at"), "meta": ("key", "value"),
           "pairs": ("seq", "id", "replica", "stored_at", "record", "reference", "candidate", "twin"),
           "measured": ("version", "seq", "data")}
_SHAPE = ", ".join(f"{table}({', '.join(cols)})" for table, cols in COLUMNS.items())


def prepare(db: Any, name: str, writer: bool) -> bool:
    """Check the database `db` (a psycopg connection in autocommit mode) holds a store, and for a
    `writer` create or migrate it first; True when this call created it."""
    if not writer:
        _check(db, name, _tables(db), migrate=False)
        return False
    with db.transaction():
        db.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        tables = _tables(db)
        version = 0 if not tables else _check(db, name, tables, migrate=True)
        for step in range(version + 1, LATEST + 1):
            for statement in MIGRATIONS[step]:
                db.execute(statement)
            db.execute("INSERT INTO schema_version (version) VALUES (%s)", (step,))
    return not tables


def drop(db: Any) -> None:
    """Remove the store's tables (what `prepare` created; an import that created a store and failed)."""
    with db.transaction():
        db.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        db.execute(f"DROP TABLE IF EXISTS {', '.join(COLUMNS)}")


def _tables(db: Any) -> dict[str, tuple[str, ...]]:
    """The tables of the current schema, with their columns in order."""
    rows = db.execute("SELECT table_name, column_name FROM information_schema.columns "
                      "WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position").fetchall()
    tables: dict[str, tuple[str, ...]] = {}
    for table, column in rows:
        tables[table] = (*tables.get(table, ()), column)
    return tables


def _check(db: Any, name: str, tables: dict[str, tuple[str, ...]], migrate: bool) -> int:
    """The store's schema version, after refusing what is no gatekeeper store this gatekeeper
    reads (a writer, `migrate`, accepts an older one)."""
    if not tables:
        raise ConfigError("not a pair store: the database holds no table (a writer creates the store: "
                          "`gatekeeper shadow --store` or `gatekeeper pairs import --store`)", name, hint=HINT)
    ours = {t: cols for t, cols in tables.items() if t in COLUMNS}
    if ours != COLUMNS:
        found = ", ".join(sorted(tables)[:8])
        raise ConfigError(f"not a pair store: another database (tables {found}; a store has {_SHAPE})", name, hint=HINT)
    marker = db.execute("SELECT value FROM meta WHERE key = %s", (MARKER,)).fetchone()
    if marker is None:
        raise ConfigError(f"not a pair store: no {MARKER!r} marker in its meta table", name, hint=HINT)
    version = int(db.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version").fetchone()[0])
    if version > LATEST:
        raise ConfigError(f"pair store of schema {version}; this gatekeeper reads schema {LATEST} (a newer gatekeeper "
                          "wrote it)", name)
    if version < LATEST and not migrate:
        raise ConfigError(f"pair store of schema {version}; this gatekeeper reads schema {LATEST} (a writer migrates it: "
                          "`gatekeeper shadow --store` or `gatekeeper pairs import --store`)", name)
    return version
