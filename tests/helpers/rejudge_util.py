"""`gatekeeper rejudge` as a real subprocess, and what two runs' checks say side by side."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from run_util import RunOutcome
from paths import ROOT


def gk_rejudge(run_dir: Path, *args: str, out: Path | None = None) -> RunOutcome:
    """`gatekeeper rejudge RUN_DIR ARGS... --out OUT`; the run directory is the one it created."""
    out = out or run_dir.parent
    before = set(out.iterdir()) if out.exists() else set()
    proc = subprocess.run([sys.executable, "-m", "gatekeeper.cli", "rejudge", str(run_dir), "--out", str(out), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert "Traceback" not in proc.stderr, proc.stderr
    new = sorted(p for p in set(out.iterdir()) - before if p.is_dir()) if out.exists() else []
    run = new[-1] if new else None
    summary = json.loads((run / "summary.json").read_text()) if run and (run / "summary.json").is_file() else None
    return RunOutcome(proc.returncode, proc.stderr, summary, run)


def checks(summary: dict) -> dict[str, tuple[str, bool, str]]:
    """Every check of a summary by id: (status, blocking, reason)."""
    return {c["id"]: (c["status"], c["blocking"], c["reason"]) for g in summary["gates"] for c in g["checks"]}


def comparable_reasons(out: RunOutcome) -> list[str]:
    """A run's verdict reasons with its own directory written `<RUN>`: a "Next:" names the run to resume."""
    return [r.replace(str(out.run_dir), "<RUN>") for r in out.summary["reasons"]]
