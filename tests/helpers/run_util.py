"""Run `gatekeeper run` as a real subprocess and read what it wrote."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass
class RunOutcome:
    """Exit code, stderr, and the summary (None if no summary.json was written)."""

    code: int
    stderr: str
    summary: dict | None
    run_dir: Path | None

    def check(self, check_id: str) -> dict:
        """One check of the summary by id."""
        assert self.summary is not None, self.stderr
        for gate in self.summary["gates"]:
            for c in gate["checks"]:
                if c["id"] == check_id:
                    return c
        raise AssertionError(f"no check {check_id}; have {[c['id'] for g in self.summary['gates'] for c in g['checks']]}")

    def record(self, check_id: str) -> dict:
        """One check as records.jsonl holds it, with its evidence."""
        assert self.run_dir is not None, self.stderr
        for line in (self.run_dir / "records.jsonl").read_text().splitlines():
            rec = json.loads(line)
            if rec.get("id") == check_id:
                return rec
        raise AssertionError(f"no record of {check_id} in {self.run_dir}")

    def gate(self, gate_id: str) -> dict:
        """One gate of the summary by id."""
        assert self.summary is not None, self.stderr
        return next(g for g in self.summary["gates"] if g["id"] == gate_id)


def held_only_for_undecided_performance(summary: dict) -> bool:
    """Whether a run HOLDs only because the performance gate could not decide — a guardrail's interval
    (~5% of clean runs by benchmarks/perf_decidability.py) or the primary figure's sequential test
    (~4% of clean runs after 12 rounds uncalibrated, tests/perf/test_sequential.py) — no other reason."""
    return summary["verdict"] == "HOLD" and all(r.startswith(("performance.c", "performance.primary")) and ": UNDECIDED" in r
                                                for r in summary["reasons"])


def gk_run(out: Path, *args: str, timeout: float = 600, env: dict[str, str] | None = None) -> RunOutcome:
    """`gatekeeper run --out OUT ARGS...` (in `env` when given); the run directory is the one it created."""
    out.mkdir(parents=True, exist_ok=True)
    before = set(out.iterdir())
    proc = subprocess.run([sys.executable, "-m", "gatekeeper.cli", "run", "--out", str(out), *args],
                          capture_output=True, text=True, timeout=timeout, env=env)
    new = sorted(p for p in set(out.iterdir()) - before if p.is_dir())  # not perf-history.jsonl beside them
    run_dir = new[-1] if new else None
    summary = None
    if run_dir and (run_dir / "summary.json").is_file():
        summary = json.loads((run_dir / "summary.json").read_text())
    assert "Traceback" not in proc.stderr, proc.stderr
    return RunOutcome(proc.returncode, proc.stderr, summary, run_dir)
