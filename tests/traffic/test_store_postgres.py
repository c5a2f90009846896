"""The PostgreSQL pair store against a real PostgreSQL server (tests/helpers/pg_server.py; one
server per session, a fresh database per test): the same pairs give the same verdict as in
SQLite (judged from scratch and kept up to date), pairs move between the backends through
`pairs export/import` unchanged, two writer processes with their own replica ids share one store
without losing or doubling a pair, the ROLLBACK latch is one row for every replica, a read-only
store cannot write, and what is no store — a bad URL, an unreachable server, a wrong password,
another program's database — is a one-line error with the password masked."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from gatekeeper.errors import ConfigError
from gatekeeper.gates.shadow.gate import _stored
from gatekeeper.live.judgement import LiveJudgement
from gatekeeper.live.verdict import judge_store
from gatekeeper.traffic.settings import ShadowSettings
from gatekeeper.traffic.store import Batching, PairStore, SqliteStore, import_pairs, open_store
from gatekeeper.traffic.store.interface import WriteStats
from gatekeeper.traffic.store.postgres import PostgresStore
from paths import ROOT
from pg_server import PASSWORD, USER
from store_pairs import pair

SETTINGS = ShadowSettings(min_slice_requests=10)


def gk(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gatekeeper.cli", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def _fill(store: PairStore, n: int, first: int = 0, seed: int = 1) -> None:
    for i in range(first, first + n):
        store.add(*pair(seed, i))
    store.flush()


def _same(a: dict, b: dict) -> None:
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _without_time(data: dict) -> dict:
    if "latched" in data:
        data = {**data, "latched": {k: v for k, v in data["latched"].items() if k != "at"}}
    return data


def test_the_same_pairs_give_the_same_verdict_in_both_stores(tmp_path: Path, pg_url: str):
    lite, pg = SqliteStore(tmp_path / "s.db"), open_store(pg_url, batching=Batching(16, 5.0))
    live = LiveJudgement(pg, SETTINGS, min_pairs=200)
    verdicts = set()
    for n in (0, 37, 100, 150):  # looks as pairs arrive: the kept-up verdict equals both judged from scratch
        _fill(lite, n, len(lite))
        _fill(pg, n, len(pg))
        full = judge_store(lite, SETTINGS, 200)
        _same(judge_store(pg, SETTINGS, 200), full)
        _same(_without_time(live.judge()), _without_time(judge_store(lite, SETTINGS, 200, sticky=True)))
        verdicts.add(full["verdict"])
    assert list(pg.rows()) == list(lite.rows()) and len(pg) == 287
    assert verdicts == {"HOLD", "ROLLBACK"}  # beta's broken candidate is caught in both
    restarted = LiveJudgement(open_store(pg_url), SETTINGS, min_pairs=200)  # the measure cache read back
    _same(_without_time(restarted.judge()), _without_time(judge_store(lite, SETTINGS, 200, sticky=True)))
    with open_store(pg_url, readonly=True) as readonly:  # gate 5's --shadow-store reads it as it reads a file
        assert [r.id for r in _stored(ShadowSettings(store=pg_url))[0].records] == [r.id for r, *_ in readonly.rows()]
    assert len(_stored(ShadowSettings(store=str(Path(pg_url))))[0].records) == 287  # a URL a Path lost a slash of


def test_pairs_move_between_sqlite_and_postgresql_unchanged(tmp_path: Path, pg_url: str, pg_server):
    lite = SqliteStore(tmp_path / "a.db")
    _fill(lite, 120)
    lite.export(tmp_path / "a.jsonl")
    imported = gk("pairs", "import", tmp_path / "a.jsonl", "--store", pg_url)
    assert imported.returncode == 0, imported.stderr
    assert f"{tmp_path / 'a.jsonl'}: 120 pair(s) added, 0 already held" in imported.stdout
    assert "postgresql://***@127.0.0.1" in imported.stdout and PASSWORD not in imported.stdout
    assert import_pairs(pg_url, [tmp_path / "a.jsonl"]) == ([(0, 120)], 120)  # ids already held are skipped
    exported = gk("pairs", "export", pg_url, "--out", tmp_path / "b.jsonl")
    assert exported.returncode == 0 and "exported 120 pair(s)" in exported.stdout, exported.stderr
    assert (tmp_path / "b.jsonl").read_text() == (tmp_path / "a.jsonl").read_text()
    back = SqliteStore(tmp_path / "b.db")
    assert back.import_file(tmp_path / "b.jsonl") == (120, 0) and list(back.rows()) == list(lite.rows())
    (tmp_path / "bad.jsonl").write_text((tmp_path / "a.jsonl").read_text() + '{"endpoint": "chat", "request": {}}\n')
    fresh = pg_server.create_database("fresh_import")
    with pytest.raises(ConfigError, match="bad.jsonl:121"):  # all or nothing: a store this import created is gone
        import_pairs(fresh, [tmp_path / "bad.jsonl"])
    with pytest.raises(ConfigError, match="the database holds no table"):
        open_store(fresh, readonly=True)
    with pytest.raises(ConfigError, match="bad.jsonl:121"):  # and one that existed is as it was
        import_pairs(pg_url, [tmp_path / "a.jsonl", tmp_path / "bad.jsonl"])
    assert len(open_store(pg_url, readonly=True)) == 120


def test_two_writer_processes_share_one_store(tmp_path: Path, pg_url: str):
    """Two replicas (processes) write overlapping ranges in batches: every pair once, with the
    replica that stored it, numbered in commit order; the verdict is SQLite's over the same pairs."""
    open_store(pg_url).close()  # created once; both replicas then open an existing store
    helper = ROOT / "tests" / "helpers" / "store_pairs.py"
    env = {"PYTHONPATH": f"{ROOT}:{ROOT / 'tests' / 'helpers'}", "PATH": "/usr/bin:/bin"}
    procs = [subprocess.Popen([sys.executable, str(helper), pg_url, name, str(first), "400", "16"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for name, first in (("replica-a", 0), ("replica-b", 300))]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in outs]
    with psycopg.connect(pg_url) as db:
        by_replica = dict(db.execute("SELECT replica, COUNT(*) FROM pairs GROUP BY replica").fetchall())
        ids = [i for (i,) in db.execute("SELECT id FROM pairs ORDER BY seq")]
    assert sorted(ids, key=lambda x: int(x[1:])) == [f"r{i}" for i in range(700)]  # 100 overlapping ids stored once
    assert set(by_replica) == {"replica-a", "replica-b"} and sum(by_replica.values()) == 700
    assert by_replica["replica-a"] >= 300 and by_replica["replica-b"] >= 300
    lite = SqliteStore(tmp_path / "s.db")
    for record, ref, cand, twin in open_store(pg_url, readonly=True).rows():  # the pairs in the store's order
        lite.add(record, ref, cand, twin)
    _same(judge_store(open_store(pg_url, readonly=True), SETTINGS, 200), judge_store(lite, SETTINGS, 200))


def test_the_latch_is_one_row_for_every_replica(pg_url: str):
    a, b = open_store(pg_url, replica="a"), open_store(pg_url, replica="b")
    _fill(a, 150)
    rolled = judge_store(a, SETTINGS, 100, sticky=True)
    assert rolled["verdict"] == "ROLLBACK"
    assert b.latched() == rolled["latched"]  # latched by a, seen by b
    b.latch({"reason": "another", "judged": 1, "pairs": 1})  # the first ROLLBACK stays
    assert a.latched() == rolled["latched"]
    assert b.reset_latch() == rolled["latched"]  # one reset, for all
    assert a.latched() is None and a.reset_latch() is None


def test_a_read_only_store_cannot_write(pg_url: str):
    _fill(open_store(pg_url), 30)
    store = open_store(pg_url, readonly=True)
    assert judge_store(store, SETTINGS)["pairs"] == 30  # judging reads
    assert isinstance(store, PostgresStore)
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):  # the session is read-only: nothing it runs writes
        store._db.execute("INSERT INTO meta VALUES ('x', 'y')")
    with pytest.raises(AssertionError, match="never written"):
        store.latch({"reason": "r", "judged": 1, "pairs": 1})
    assert len(store) == 30 and store.latched() is None


def test_a_writer_refuses_a_role_that_may_not_insert(pg_url: str, pg_server):
    _fill(open_store(pg_url), 3)
    with pg_server.admin(pg_url.rsplit("/", 1)[1]) as db:
        db.execute("CREATE ROLE gk_reader LOGIN PASSWORD 'reader-pw'")
        db.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO gk_reader")
    reader = pg_url.replace(f"{USER}:{PASSWORD}", "gk_reader:reader-pw")
    assert len(open_store(reader, readonly=True)) == 3
    with pytest.raises(ConfigError, match="may not insert into its pairs table") as e:
        open_store(reader)
    assert "reader-pw" not in str(e.value)


def _one_line(p: subprocess.CompletedProcess, *fragments: str) -> None:
    assert p.returncode == 3, (p.returncode, p.stderr)
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert PASSWORD not in p.stderr + p.stdout and "wrong-pw-123" not in p.stderr
    for f in fragments:
        assert f in p.stderr, (f, p.stderr)


def test_what_is_no_reachable_store_is_one_line_with_the_password_masked(tmp_path: Path, pg_url: str, pg_server):
    _fill(open_store(pg_url), 5)
    port = pg_server.port
    wrong = pg_url.replace(PASSWORD, "wrong-pw-123")
    _one_line(gk("pairs", "export", wrong, "--out", tmp_path / "x.jsonl"), "password authentication failed",
              f"postgresql://***@127.0.0.1:{port}/")
    _one_line(gk("pairs", "export", f"postgresql://{USER}:{PASSWORD}@127.0.0.1:1/db", "--out", tmp_path / "x.jsonl"),
              "cannot open the pair store", "postgresql://***@127.0.0.1:1/db")
    _one_line(gk("pairs", "export", f"postgresql://{USER}:{PASSWORD}@127.0.0.1:notaport/db", "--out", tmp_path / "x.jsonl"),
              "cannot open the pair store")
    _one_line(gk("pairs", "export", pg_url.rsplit("/", 1)[0] + "/no_such_db", "--out", tmp_path / "x.jsonl"),
              'database "no_such_db" does not exist')
    _one_line(gk("run", "--out", tmp_path / "runs", "--gates", "shadow", "--shadow-store", wrong, "--reference",
                 "http://127.0.0.1:9", "--candidate", "http://127.0.0.1:9", "--served-model", "m"),
              "password authentication failed", "postgresql://***@")
    assert not (tmp_path / "x.jsonl").exists()


def test_a_database_that_is_not_a_store_is_refused(tmp_path: Path, pg_url: str):
    with psycopg.connect(pg_url, autocommit=True) as db:
        db.execute("CREATE TABLE invoices (id INT PRIMARY KEY, total NUMERIC)")
    for readonly in (True, False):  # judging and writing alike; nothing is created beside it
        with pytest.raises(ConfigError, match=r"not a pair store: another database \(tables invoices"):
            open_store(pg_url, readonly=readonly)
    _one_line(gk("pairs", "import", tmp_path / "none.jsonl", "--store", pg_url), "not a pair store")
    with psycopg.connect(pg_url) as db:
        assert [t for (t,) in db.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")] == ["invoices"]
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    with pytest.raises(ConfigError, match="another database"):
        open_store(pg_url)


def test_a_store_of_a_newer_schema_is_refused_and_an_unflushed_batch_waits(pg_url: str):
    store = open_store(pg_url, batching=Batching(10, 60.0))
    for i in range(9):
        assert store.add(*pair(1, i))
    assert len(open_store(pg_url, readonly=True)) == 0  # buffered: a SIGKILL now loses these nine
    store.add(*pair(1, 9))
    assert len(open_store(pg_url, readonly=True)) == 10  # the tenth commits the batch
    store.add(*pair(1, 3))  # an id already held, found when its batch commits
    store.close()
    assert isinstance(store, PostgresStore) and store.write_stats().duplicates == 1
    with psycopg.connect(pg_url, autocommit=True) as db:
        db.execute("INSERT INTO schema_version (version) VALUES (2)")
    with pytest.raises(ConfigError, match="pair store of schema 2; this gatekeeper reads schema 1"):
        open_store(pg_url, readonly=True)


def test_a_failed_commit_keeps_the_batch_and_the_next_reconnects(pg_url: str, pg_server):
    store = open_store(pg_url, batching=Batching(5, 60.0))
    assert isinstance(store, PostgresStore)
    with pg_server.admin() as db:  # the server ends the replica's session (a restart, a failover)
        db.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                   (pg_url.rsplit("/", 1)[1],))
    for i in range(5):  # the fifth's commit fails: kept, and `add` says nothing (the mirror goes on)
        assert store.add(*pair(1, i))
    stats = store.write_stats()
    assert stats.pending == 5 and stats.stored == 0 and stats.failing is not None
    assert "the pair store failed" in stats.failing and PASSWORD not in stats.failing
    store.flush()  # which reconnects
    assert len(store) == 5 and [r.id for r, *_ in store.rows()] == [f"r{i}" for i in range(5)]
    assert store.write_stats() == WriteStats(stored=5)


def test_a_url_without_psycopg_names_the_extra_and_sqlite_needs_none(tmp_path: Path):
    """psycopg is imported only for a URL: hidden, a URL is one line naming the extra; a file works."""
    script = ("import sys; sys.modules['psycopg'] = None; from gatekeeper.cli import main; "
              "sys.argv = ['gatekeeper', 'pairs', 'import', sys.argv[1], '--store', sys.argv[2]]; main()")
    lite = SqliteStore(tmp_path / "a.db")
    _fill(lite, 3)
    lite.export(tmp_path / "a.jsonl")
    url = f"postgresql://{USER}:{PASSWORD}@127.0.0.1:1/db"
    p = subprocess.run([sys.executable, "-c", script, str(tmp_path / "a.jsonl"), url], cwd=ROOT, capture_output=True, text=True)
    _one_line(p, "pip install 'gatekeeper[postgres]'")
    p = subprocess.run([sys.executable, "-c", script, str(tmp_path / "a.jsonl"), str(tmp_path / "b.db")], cwd=ROOT,
                       capture_output=True, text=True)
    assert p.returncode == 0 and "3 pair(s) added" in p.stdout, p.stderr
