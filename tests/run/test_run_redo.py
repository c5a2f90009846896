"""`gatekeeper run --resume RUN_DIR --redo GATE[,GATE]`: a finished run asks the named gates again on
fresh targets, keeps every other gate's records, and writes one report whose summary.json names the
gates redone; without --resume, with an unknown gate, or on a finished run without --redo: exit 3,
one line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gatekeeper.report.records import GATE_FORMAT, read_records
from paths import ROOT
from run_util import gk_run

pytest.importorskip("torch")

OPTIONS = ("--gates", "startup,numerics,golden", "--cases", "canary-ok", "--seed", "3")


def _gk(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gatekeeper.cli", "run", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def test_a_finished_run_asks_one_gate_again_and_keeps_the_rest(tmp_path):
    first = gk_run(tmp_path / "out", *OPTIONS)
    assert first.summary is not None and first.run_dir is not None, first.stderr
    run_dir = first.run_dir
    numerics_before = [r for r in read_records(run_dir / "records.jsonl") if r.get("gate") == "numerics"]
    done = _gk(*OPTIONS, "--resume", str(run_dir), "--redo", "golden")
    assert done.returncode == first.code, done.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["resumed"] == {"reused": ["numerics"], "ran": ["startup", "golden"], "redone": ["golden"]}, summary["resumed"]
    assert "asking again: golden" in done.stderr
    lines = list(read_records(run_dir / "records.jsonl"))
    assert [r for r in lines if r.get("gate") == "numerics"] == numerics_before  # kept as they were
    assert [r["id"] for r in lines if r.get("format") == GATE_FORMAT].count("golden") == 1  # the old golden lines went
    assert not (run_dir / "incomplete.json").exists()


@pytest.mark.parametrize("args, says", [
    (("--redo", "golden"), "--redo needs --resume RUN_DIR"),
    (("--resume", "{run}", "--redo", "nosuch"), "unknown gate(s) nosuch"),
    (("--resume", "{run}"), "the run is complete (summary.json); nothing to resume"),
])
def test_bad_redo_is_exit_3_with_one_line(tmp_path, args, says):
    run_dir = tmp_path / "20260101T000000Z-abcdef"
    run_dir.mkdir()
    (run_dir / "summary.json").write_text("{}")
    done = _gk(*OPTIONS, *(a.replace("{run}", str(run_dir)) for a in args))
    assert done.returncode == 3 and says in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
