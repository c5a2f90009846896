"""Judging a pair store never writes to it, and a file that is no (sound) store is a one-line
error naming it: an empty file, random bytes, another program's SQLite database, a store of
another schema, a store with a damaged page, a row that is not a valid pair (named by its id).
`pairs import` is all or nothing. Stores are real files; the CLI runs as a subprocess; the
gate is called through the function it opens and reads a store with (no engine is started)."""

from __future__ import annotations

import hashlib
import json
import random
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from gatekeeper.errors import ConfigError
from gatekeeper.traffic.answers import Answer
from gatekeeper.gates.shadow.gate import _stored
from gatekeeper.traffic.settings import ShadowSettings
from gatekeeper.traffic.store import MARKER, SqliteStore
from gatekeeper.traffic.format import parse_record
from paths import ROOT


def gk(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gatekeeper.cli", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def _record(i: int):
    return parse_record({"endpoint": "chat", "id": f"r{i}", "tenant": "acme",
                         "request": {"messages": [{"role": "user", "content": f"question {i}"}], "temperature": 0}}, i)


def _store(path: Path, n: int = 6, text: str = "") -> Path:
    store = SqliteStore(path)
    for i in range(n):
        ref = Answer(f"answer {i} {text}", finish_reason="stop", tokens=4, e2e_s=0.5)
        store.add(_record(i), ref, ref, ref)
    store.close()
    return path


def _snapshot(folder: Path) -> dict[str, str]:
    """Every file of the folder (the listing) with its hash."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def _judge(path: Path) -> int:
    """What gate 5 does with `--shadow-store PATH`: open the store and read every pair."""
    traffic, _ = _stored(ShadowSettings(store=str(path)))
    return len(traffic.records)


def _empty(d: Path) -> Path:
    (d / "x.db").write_bytes(b"")
    return d / "x.db"


def _random(d: Path) -> Path:
    (d / "x.db").write_bytes(random.Random(7).randbytes(20000))
    return d / "x.db"


def _foreign(d: Path) -> Path:
    db = sqlite3.connect(d / "x.db")
    db.execute("CREATE TABLE users (name TEXT, email TEXT)")
    db.execute("INSERT INTO users VALUES ('ada', 'ada@example.com')")
    db.commit()
    db.close()
    return d / "x.db"


def _lookalike(d: Path) -> Path:
    """Tables of the right names and columns, but no marker (nor the pre-marker `schema` key)."""
    _store(d / "x.db")
    db = sqlite3.connect(d / "x.db")
    db.execute("DELETE FROM meta")
    db.commit()
    db.close()
    return d / "x.db"


def _other_schema(d: Path) -> Path:
    _store(d / "x.db")
    db = sqlite3.connect(d / "x.db")
    db.execute("UPDATE meta SET value = '2'")
    db.commit()
    db.close()
    return d / "x.db"


def _damaged_page(d: Path) -> Path:
    """A multi-page store whose middle page's header is overwritten (an index or table page)."""
    path = _store(d / "x.db", n=300, text="lorem ipsum " * 40)
    data = bytearray(path.read_bytes())
    size = int.from_bytes(data[16:18], "big")
    pages = len(data) // size
    assert pages > 20
    middle = size * (pages // 2)
    data[middle:middle + 64] = b"\xa5" * 64
    path.write_bytes(bytes(data))
    return path


BAD_STORES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "empty file": (_empty, "not a pair store: the file is empty"),
    "random bytes": (_random, "not a pair store: not an SQLite database"),
    "another program's database": (_foreign, "not a pair store: another SQLite database (tables users;"),
    "pair tables without a marker": (_lookalike, f"no '{MARKER}' marker"),
    "another schema": (_other_schema, "schema 2; this gatekeeper reads schema 1"),
    "a damaged page": (_damaged_page, "corrupted: "),
}


def _one_line_error(p: subprocess.CompletedProcess, *fragments: str) -> None:
    assert p.returncode == 3, (p.returncode, p.stderr)
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    for f in fragments:
        assert f in p.stderr, (f, p.stderr)


def test_judging_a_store_reads_every_pair_and_leaves_it_byte_identical(tmp_path: Path):
    path = _store(tmp_path / "s.db", n=40)
    before = _snapshot(tmp_path)
    assert _judge(path) == 40
    store = SqliteStore.open_readonly(path)
    assert len(store) == 40 and store.latched() is None
    store.close()
    assert _snapshot(tmp_path) == before  # no -wal or -shm file appears either


def test_a_store_a_writer_holds_open_is_read_whole_and_left_as_it_was(tmp_path: Path):
    """Pairs committed to the -wal file but not yet checkpointed (a live proxy, or one killed by
    SIGKILL) are judged; the database and its -wal file stay byte-identical (SQLite's -shm index
    of the -wal may be rebuilt)."""
    writer = SqliteStore(tmp_path / "s.db")
    for i in range(12):
        writer.add(_record(i), Answer(f"a{i}"), Answer(f"a{i}"), None)
    try:
        before = {k: v for k, v in _snapshot(tmp_path).items() if not k.endswith("-shm")}
        assert "s.db-wal" in before
        assert _judge(tmp_path / "s.db") == 12
        assert {k: v for k, v in _snapshot(tmp_path).items() if not k.endswith("-shm")} == before
    finally:
        writer.close()


def test_a_store_made_before_the_marker_is_judged_and_left_unmarked(tmp_path: Path):
    """A store whose `meta` holds only `schema` = 1 (what gatekeeper wrote before the marker) is
    accepted by its tables' shape; neither judging nor a writer adds the marker to it."""
    path = _store(tmp_path / "s.db")
    db = sqlite3.connect(path)
    db.execute("DELETE FROM meta WHERE key = ?", (MARKER,))
    db.commit()
    db.close()
    before = _snapshot(tmp_path)
    assert _judge(path) == 6
    assert _snapshot(tmp_path) == before
    writer = SqliteStore(path)
    writer.add(_record(99), Answer("x"), Answer("x"), None)
    writer.close()
    keys = [k for (k,) in sqlite3.connect(path).execute("SELECT key FROM meta")]
    assert keys == ["schema"] and _judge(path) == 7


@pytest.mark.parametrize("case", list(BAD_STORES))
def test_a_file_that_is_no_sound_store_is_refused_and_left_byte_identical(tmp_path: Path, case: str):
    make, says = BAD_STORES[case]
    path = make(tmp_path)
    before = _snapshot(tmp_path)
    with pytest.raises(ConfigError) as e:
        _judge(path)
    assert str(e.value).startswith(f"{path}: ") and says in str(e.value), str(e.value)
    assert e.value.exit_code == 3
    if case != "empty file":  # a writer refuses it too (in an empty file, it creates a store)
        with pytest.raises(ConfigError, match="not a pair store|schema 2|corrupted"):
            SqliteStore(path)
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize("case", ["random bytes", "another program's database", "a damaged page"])
def test_the_cli_refuses_a_bad_store_in_one_line_and_writes_nothing(tmp_path: Path, case: str):
    make, says = BAD_STORES[case]
    path = make(tmp_path)
    before = _snapshot(tmp_path)
    _one_line_error(gk("pairs", "export", path, "--out", tmp_path / "out.jsonl"), str(path), says)
    _one_line_error(gk("run", "--out", tmp_path / "runs", "--gates", "shadow", "--shadow-store", path,
                       "--reference", "http://127.0.0.1:9", "--candidate", "http://127.0.0.1:9", "--served-model", "m"),
                    str(path), says)
    assert _snapshot(tmp_path) == before  # no export, no run directory, the store untouched


BAD_ROWS = {  # (column, what to store there, what the error says)
    "record not JSON": ("record", "{not json", "record is not JSON"),
    "record without a request": ("record", json.dumps({"endpoint": "chat", "id": "r2"}), "record: request must be an object"),
    "answer not JSON": ("reference", "[1, 2", "reference is not JSON"),
    "answer a list": ("candidate", json.dumps([{"text": "a"}]), "candidate: an answer must be an object (got list)"),
    "e2e_s a string": ("reference", None, 'reference: e2e_s must be seconds (a finite number >= 0) (got "abc")'),
    "a missing key": ("twin", None, "twin: missing key 'text'"),
}


@pytest.mark.parametrize("case", list(BAD_ROWS))
def test_a_bad_row_is_an_error_naming_the_pair(tmp_path: Path, case: str):
    column, value, says = BAD_ROWS[case]
    path = _store(tmp_path / "s.db")
    good = Answer("answer 2", finish_reason="stop", tokens=4, e2e_s=0.5).to_dict()
    if case == "e2e_s a string":
        value = json.dumps({**good, "e2e_s": "abc"})
    elif case == "a missing key":
        value = json.dumps({k: v for k, v in good.items() if k != "text"})
    db = sqlite3.connect(path)
    db.execute(f"UPDATE pairs SET {column} = ? WHERE id = 'r2'", (value,))
    db.commit()
    db.close()
    before = _snapshot(tmp_path)
    with pytest.raises(ConfigError) as e:
        _judge(path)
    assert str(e.value).startswith(f"{path}: pair 'r2' is not a valid stored pair: {says}"), str(e.value)
    if case in ("e2e_s a string", "answer a list"):
        _one_line_error(gk("pairs", "export", path, "--out", tmp_path / "out.jsonl"), f"{path}: pair 'r2'", says)
    assert _snapshot(tmp_path) == before


def _export_with_bad_line(folder: Path, bad: str) -> Path:
    """An exported traffic file of 8 pairs whose 5th line is `bad` (json: a bad e2e_s; list: an
    answer that is a list; text: a line that is not JSON)."""
    _store(folder / "src.db", n=8)
    out = folder / "pairs.jsonl"
    SqliteStore.open_readonly(folder / "src.db").export(out)
    (folder / "src.db").unlink()
    lines = out.read_text().splitlines()
    line = json.loads(lines[4])
    line["id"] = "new4"
    if bad == "e2e_s":
        line["pair"]["reference"]["e2e_s"] = "abc"
    elif bad == "list":
        line["pair"]["twin"] = [line["pair"]["twin"]]
    lines[4] = "{not json" if bad == "text" else json.dumps(line)
    for i in range(len(lines)):  # new ids: what the import would add
        if i != 4:
            lines[i] = lines[i].replace(f'"id": "r{i}"', f'"id": "new{i}"')
    out.write_text("\n".join(lines) + "\n")
    return out


@pytest.mark.parametrize("bad,says", [("e2e_s", "pair: reference: e2e_s must be seconds"),
                                      ("list", "pair: twin: an answer must be an object (got list)"),
                                      ("text", "not JSON")])
def test_an_import_that_fails_on_line_5_changes_nothing(tmp_path: Path, bad: str, says: str):
    src = tmp_path / "in"
    src.mkdir()
    traffic = _export_with_bad_line(src, bad)
    stores = tmp_path / "stores"
    stores.mkdir()
    _store(stores / "held.db", n=3)
    (stores / "empty.db").write_bytes(b"")
    before = _snapshot(stores)
    for target in ("held.db", "empty.db", "absent.db"):
        _one_line_error(gk("pairs", "import", traffic, "--store", stores / target), f"{traffic}:5: {says}")
        assert _snapshot(stores) == before, target  # the held store as it was, the empty file empty, no new file
    assert len(SqliteStore.open_readonly(stores / "held.db")) == 3


def test_an_import_adds_every_file_or_none(tmp_path: Path):
    """Two files in one import: the second's bad line undoes the first's pairs too; the good
    file alone imports, and a second import adds nothing it already holds."""
    _store(tmp_path / "a.db", n=5)
    SqliteStore.open_readonly(tmp_path / "a.db").export(tmp_path / "good.jsonl")
    bad_dir = tmp_path / "bad"
    bad_dir.mkdir()
    bad = _export_with_bad_line(bad_dir, "e2e_s")
    _one_line_error(gk("pairs", "import", tmp_path / "good.jsonl", bad, "--store", tmp_path / "m.db"), f"{bad}:5:")
    assert not (tmp_path / "m.db").exists()
    p = gk("pairs", "import", tmp_path / "good.jsonl", "--store", tmp_path / "m.db")
    assert p.returncode == 0 and "5 pair(s) added, 0 already held" in p.stdout and "m.db: 5 pair(s)" in p.stdout, p.stderr
    assert SqliteStore(tmp_path / "m.db").import_file(tmp_path / "good.jsonl") == (0, 5)
    foreign = _foreign(bad_dir)
    before = _snapshot(bad_dir)
    _one_line_error(gk("pairs", "import", tmp_path / "good.jsonl", "--store", foreign), str(foreign), "tables users")
    assert _snapshot(bad_dir) == before  # a writer adds no table to another program's database
