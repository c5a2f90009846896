"""`gatekeeper run --resume RUN_DIR`: an interrupted run is continued by the same plan only, its
finished gates are reused (counted in summary.json's `resumed`), the rest run again, and the
verdict is the one an uninterrupted run gives."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from gatekeeper.config.run_config import resolve
from gatekeeper.run.plan import build_plan
from gatekeeper.run.run_dir import INCOMPLETE, fingerprint, mark_incomplete, write_plan
from gatekeeper.report.records import GATE_FORMAT, read_records
from rejudge_util import gk_rejudge
from paths import ROOT


def _resume(run_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gatekeeper.cli", "run", *args, "--resume", str(run_dir)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)


def _interrupted_dir(tmp_path: Path, **options: str) -> Path:
    """A run directory as a run killed right after it started leaves it: incomplete.json and
    plan.json with the fingerprint of the plan `options` make."""
    values, sources = resolve(None, {}, options)
    run_dir = tmp_path / "out" / "20260101T000000Z-abcdef"
    values = replace(values, out=str(run_dir.parent))  # as `gatekeeper run --resume` sets it
    plan = build_plan(values, sources, run_dir.name)
    run_dir.mkdir(parents=True)
    mark_incomplete(run_dir, run_dir.name, "2026-01-01T00:00:00+00:00")
    write_plan(run_dir, run_dir.name, fingerprint(plan))
    return run_dir


def _one_line_usage_error(proc: subprocess.CompletedProcess, fragment: str) -> None:
    assert proc.returncode == 3, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gatekeeper: error: ") and fragment in lines[0], proc.stderr


def test_resume_names_the_part_of_the_plan_that_differs(tmp_path):
    run_dir = _interrupted_dir(tmp_path, policy="gates/smoke.yaml")
    _one_line_usage_error(_resume(run_dir, "--policy", "gates/smoke.yaml", "--seed", "7"), "differs from the interrupted "
                          "run's in: options")
    _one_line_usage_error(_resume(run_dir), "in: options, policy")  # the default policy, not smoke's
    assert sorted(p.name for p in run_dir.iterdir()) == [INCOMPLETE, "plan.json"]  # nothing written, nothing started


def test_resume_refuses_a_complete_run_and_a_directory_that_is_no_run(tmp_path):
    run_dir = _interrupted_dir(tmp_path)
    (run_dir / INCOMPLETE).unlink()
    (run_dir / "summary.json").write_text("{}")
    _one_line_usage_error(_resume(run_dir), "the run is complete")
    _one_line_usage_error(_resume(tmp_path / "nowhere"), "no such run directory")
    (tmp_path / "empty").mkdir()
    _one_line_usage_error(_resume(tmp_path / "empty"), "not an interrupted run")
    _one_line_usage_error(_resume(run_dir, "--dry-run"), "do not go together")


def _gates_ended(run_dir: Path) -> list[str]:
    return [r["id"] for r in read_records(run_dir / "records.jsonl") if r.get("format") == GATE_FORMAT]


@pytest.mark.slow
@pytest.mark.serial  # the resumed verdict must equal the whole run's, performance gate included: alone on the machine
def test_a_run_killed_after_gate_3_resumes_to_the_uninterrupted_verdict_rerunning_only_the_rest(tmp_path, shared_run):
    pytest.importorskip("torch")
    whole = shared_run("--policy", str(ROOT / "gates/smoke.yaml"))  # the session's clean smoke run (real-browser, rejudge tests)
    assert whole.summary is not None and (whole.run_dir / INCOMPLETE).exists() is False

    out = tmp_path / "cut"
    proc = subprocess.Popen([sys.executable, "-m", "gatekeeper.cli", "run", "--policy", "gates/smoke.yaml", "--out",
                             str(out)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300  # a liveness bound, not a timing assertion
    run_dir = None
    while time.monotonic() < deadline and proc.poll() is None:
        dirs = list(out.glob("*/records.jsonl"))
        if dirs and "golden" in _gates_ended(dirs[0].parent):
            run_dir = dirs[0].parent
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert run_dir is not None, "the run ended before gate 3 did"
    assert (run_dir / INCOMPLETE).exists() and not (run_dir / "summary.json").exists()
    finished = [g for g in _gates_ended(run_dir) if g != "startup"]

    resumed = _resume(run_dir, "--policy", "gates/smoke.yaml")
    assert resumed.returncode == whole.code, resumed.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["verdict"] == whole.summary["verdict"]
    assert summary["resumed"]["reused"] == finished and "numerics" in finished and "golden" in finished
    assert summary["resumed"]["ran"] == [g["id"] for g in whole.summary["gates"] if g["id"] not in finished]
    refused = gk_rejudge(run_dir, out=tmp_path / "rejudged")  # two launches answered it: no replay as one run
    assert refused.code == 3 and "was resumed" in refused.stderr, refused.stderr
    assert (run_dir / "answers.interrupted").is_dir() and (run_dir / "answers").is_dir()
    gates = {g["id"]: g for g in summary["gates"]}
    for g in whole.summary["gates"]:
        title_line = f"gate {g['stage']}: {g['title']}"  # the progress line of a gate that runs
        if g["id"] in finished:
            assert title_line not in resumed.stderr and f"{g['id']}: {g['status']} (from the interrupted run)" in resumed.stderr
            assert gates[g["id"]]["reused"] is True
            assert [c["id"] for c in gates[g["id"]]["checks"]] == [c["id"] for c in g["checks"]]
        else:
            assert title_line in resumed.stderr and "reused" not in gates[g["id"]]
    assert not (run_dir / INCOMPLETE).exists()
    ended = _gates_ended(run_dir)
    assert sorted(ended) == sorted(g["id"] for g in whole.summary["gates"])  # one end line per gate, none twice
    assert (run_dir / "candidate.interrupted.log").exists()
