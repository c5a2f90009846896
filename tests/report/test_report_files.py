"""Files on disk: atomic writes leave no partial file, the one page writer writes what it is
handed, records survive as they are written, and write_reports produces all five reports."""

from __future__ import annotations

import json
import os
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from gatekeeper.atomic import write_atomic
from gatekeeper.report.run.pages import CorrectnessHtmlRenderer
from gatekeeper.report.records import RECORD_FORMAT, RecordWriter, read_records
from gatekeeper.report.run.files import write_reports
from gatekeeper.report.writer import write_pages
from report_runs import promote_run, rollback_run


class Boom(Exception):
    pass


def test_write_atomic_replaces_whole_file(tmp_path: Path) -> None:
    target = tmp_path / "summary.json"
    write_atomic(target, "old")
    write_atomic(target, "new ✓")
    assert target.read_text(encoding="utf-8") == "new ✓"
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


def test_write_atomic_gives_ordinary_permissions(tmp_path: Path) -> None:
    mask = os.umask(0o022)
    os.umask(mask)
    target = write_atomic(tmp_path / "summary.md", "x")
    assert target.stat().st_mode & 0o777 == 0o666 & ~mask


def test_write_atomic_failure_keeps_old_content_and_no_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "summary.json"
    write_atomic(target, "old")

    def failing_replace(src: str, dst: str) -> None:
        raise Boom("disk gone")

    monkeypatch.setattr("gatekeeper.atomic.os.replace", failing_replace)
    with pytest.raises(Boom):
        write_atomic(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


def test_write_atomic_failure_mid_write_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def failing_fsync(fd: int) -> None:
        raise Boom("fsync failed")

    monkeypatch.setattr("gatekeeper.atomic.os.fsync", failing_fsync)
    with pytest.raises(Boom):
        write_atomic(tmp_path / "junit.xml", "x" * 100_000)
    assert list(tmp_path.iterdir()) == []


def test_write_pages_writes_each_page_in_order_making_its_folders(tmp_path: Path) -> None:
    out = tmp_path / "merge"
    paths = write_pages(out, [("records/cell-a.yaml", "a: 1\n"), ("summary.md", "✓ ok\n")])
    assert paths == [out / "records" / "cell-a.yaml", out / "summary.md"]
    assert [p.read_bytes() for p in paths] == [b"a: 1\n", "✓ ok\n".encode()]
    assert not [p for p in out.rglob(".*")]


def test_write_reports_writes_five_complete_files(tmp_path: Path) -> None:
    out = tmp_path / "reports" / "run-1"
    paths = write_reports(rollback_run(), out)
    assert set(paths) == {"summary_json", "junit", "markdown", "correctness_html", "performance_html"}
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["summary.json", "junit.xml", "summary.md", "correctness.html", "performance.html"]
    )
    assert json.loads(paths["summary_json"].read_text())["verdict"] == "ROLLBACK"
    for name in ("correctness_html", "performance_html"):
        assert paths[name].read_text(encoding="utf-8").rstrip().endswith("</html>")


def test_renderer_exception_leaves_no_partial_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_reports(promote_run(), tmp_path)
    before = (tmp_path / "correctness.html").read_text(encoding="utf-8")

    def broken(self: object, data: object) -> str:
        raise Boom("template bug")

    monkeypatch.setattr(CorrectnessHtmlRenderer, "render", broken)
    with pytest.raises(Boom) as raised:
        write_reports(rollback_run(), tmp_path)
    assert "reports not written: correctness.html" in raised.value.__notes__
    assert (tmp_path / "correctness.html").read_text(encoding="utf-8") == before
    # the other reports are still written, for the new run
    assert json.loads((tmp_path / "summary.json").read_text())["verdict"] == "ROLLBACK"
    assert "ROLLBACK" in (tmp_path / "performance.html").read_text(encoding="utf-8")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_record_writer_appends_one_line_per_check(tmp_path: Path) -> None:
    path = tmp_path / "run" / "records.jsonl"
    checks = [c for g in rollback_run().gates for c in g.checks]
    with RecordWriter(path) as records:
        records.write(checks[0])
        # on disk before the writer is closed: a crash from here on loses nothing
        assert len(path.read_text(encoding="utf-8").splitlines()) == 1
        for check in checks[1:]:
            records.write(check)
    rows = list(read_records(path))
    assert [r["id"] for r in rows] == [c.id for c in checks]
    assert all(r["format"] == RECORD_FORMAT for r in rows)
    nan_row = next(r for r in rows if r["id"] == "numerics.logprob_delta")
    assert nan_row["metrics"]["first_nan"] == "NaN"
    assert nan_row["evidence"][0]["kind"] == "histogram"


def test_record_writer_reopens_in_append_mode(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    check = rollback_run().gates[0].checks[0]
    with RecordWriter(path) as w:
        w.write(check)
    with RecordWriter(path) as w:
        w.write(replace(check, id="startup.again"))
    assert [r["id"] for r in read_records(path)] == ["startup.ready", "startup.again"]


def test_read_records_ignores_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    with RecordWriter(path) as w:
        w.write(rollback_run().gates[0].checks[0])
    with open(path, "a", encoding="utf-8") as f:
        f.write('{"format": "gatekeeper.record/1", "id": "half')
    assert [r["id"] for r in read_records(path)] == ["startup.ready"]


def test_record_writer_is_thread_safe(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    check = rollback_run().gates[2].checks[1]  # has evidence with a long text
    with RecordWriter(path) as w:
        threads = [threading.Thread(target=lambda: [w.write(check) for _ in range(20)]) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert w.num_written == 80
    assert len(list(read_records(path))) == 80
