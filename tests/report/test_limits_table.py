"""scripts/limits_table.py: the table docs/detection-limits.md prints from a run's summary.json —
each blocking check with its limit, a PASS without one named, a bad file one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from paths import ROOT

SCRIPT = ROOT / "scripts" / "limits_table.py"


def _summary(tmp_path: Path) -> Path:
    limit = {"effect": 0.015, "measure": "scored positions whose |Δ logprob| exceeds 0.01 nats", "unit": "share",
             "power": 0.95, "materiality": None, "judged": 203,
             "text": "would catch ≥ 1.5% of scored positions whose |Δ logprob| exceeds 0.01 nats (95% power, 203 judged)"}
    checks = [{"id": "numerics.max_logprob_delta", "status": "PASS", "blocking": True, "detection_limit": limit},
              {"id": "numerics.kl", "status": "PASS", "blocking": True},
              {"id": "numerics.coverage", "status": "PASS", "blocking": False},
              {"id": "numerics.nll_drift", "status": "WARN", "blocking": True, "undecided": True}]
    path = tmp_path / "summary.json"
    path.write_text(json.dumps({"gates": [{"id": "numerics", "checks": checks}]}))
    return path


def test_each_blocking_check_is_a_row_and_a_pass_without_a_limit_is_named(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, str(SCRIPT), str(_summary(tmp_path))], capture_output=True, text=True, check=True)
    lines = out.stdout.splitlines()
    assert lines[0] == "| gate | check | status | what a PASS would have caught |"
    assert "| numerics | `numerics.max_logprob_delta` | PASS | would catch ≥ 1.5% of scored positions whose \\|Δ logprob\\|" \
        in out.stdout
    assert "| numerics | `numerics.kl` | PASS | no limit stated |" in lines
    assert "| numerics | `numerics.nll_drift` | UNDECIDED | – |" in lines
    assert not any("coverage" in line for line in lines)  # advisory: only with --all
    assert "1 blocking PASS without a stated limit" in out.stderr


def test_an_unreadable_summary_is_one_line(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "none.json")], capture_output=True, text=True)
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "cannot read a summary.json" in out.stderr
