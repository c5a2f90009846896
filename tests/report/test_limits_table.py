"""scripts/limits_table.py: the table docs/detection-limits.md prints from a run's summary.json —
each blocking check with its limit, a PASS without one named, a bad file one line. The summary is
one the project's own renderer writes, read back through the typed reader."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from gatekeeper.detection import DetectionLimit
from paths import ROOT
from summary_files import check, run_of, write_summary

SCRIPT = ROOT / "scripts" / "limits_table.py"
LIMIT = DetectionLimit(0.015, "scored positions whose |Δ logprob| exceeds 0.01 nats", judged=203)


def _summary(tmp_path: Path) -> Path:
    checks = [replace(check("numerics.max_logprob_delta", "PASS"), detection_limit=LIMIT),
              check("numerics.kl", "PASS"),
              check("numerics.coverage", "PASS", blocking=False),
              replace(check("numerics.nll_drift", "WARN"), undecided=True)]
    return write_summary(tmp_path / "run", run_of("HOLD", checks))


def test_each_blocking_check_is_a_row_and_a_pass_without_a_limit_is_named(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, str(SCRIPT), str(_summary(tmp_path))], capture_output=True, text=True, check=True)
    lines = out.stdout.splitlines()
    assert lines[0] == "| gate | check | status | what a PASS would have caught |"
    shown = LIMIT.text().replace("|", "\\|")
    assert f"| numerics | `numerics.max_logprob_delta` | PASS | {shown} |" in lines and "\\|Δ logprob\\|" in shown
    assert "| numerics | `numerics.kl` | PASS | no limit stated |" in lines
    assert "| numerics | `numerics.nll_drift` | UNDECIDED | – |" in lines
    assert not any("coverage" in line for line in lines)  # advisory: only with --all
    assert "1 blocking PASS without a stated limit" in out.stderr
    every = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "run"), "--all"], capture_output=True, text=True,
                           check=True)  # the run directory will do too
    assert any("`numerics.coverage`" in line for line in every.stdout.splitlines())


def test_an_unreadable_summary_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "summary.json").write_text('{"gates": []}')
    for path in (tmp_path / "none.json", tmp_path / "bad" / "summary.json"):
        out = subprocess.run([sys.executable, str(SCRIPT), str(path)], capture_output=True, text=True)
        assert out.returncode == 1 and out.stdout == ""
        assert out.stderr.count("\n") == 1 and "cannot read a summary.json" in out.stderr, out.stderr
