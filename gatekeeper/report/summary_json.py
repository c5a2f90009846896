"""summary.json: the run in a versioned, documented JSON format (docs/summary-schema.md).

`format` is "gatekeeper.summary/1". Within a major version fields are only ever added; a field
is never removed or given a new meaning without bumping the number. Evidence (long texts,
histograms) stays out of this file: it is in the HTML report and in records.jsonl.
"""

from __future__ import annotations

from typing import Any

from gatekeeper.report.jsonable import dumps
from gatekeeper.report.performance import summarize_performance
from gatekeeper.results import CheckResult, GateResult, RunResult, Status, TargetInfo

SUMMARY_FORMAT = "gatekeeper.summary/1"


def _counts(checks: tuple[CheckResult, ...]) -> dict[str, int]:
    return {s.value: sum(1 for c in checks if c.status == s) for s in Status}


def _target(t: TargetInfo) -> dict[str, Any]:
    return {
        "role": t.role,
        "kind": t.kind,
        "description": t.description,
        "base_url": t.base_url,
        "model": t.model,
        "version": t.version,
        "startup_s": t.startup_s,
        "capabilities": t.capabilities,
        "log_path": t.log_path,
    }


def _check(c: CheckResult) -> dict[str, Any]:
    return {
        "id": c.id,
        "status": c.status.value,
        "blocking": c.blocking,
        "family": c.family,
        "reason": c.reason,
        "metrics": c.metrics,
        "duration_s": c.duration_s,
    }


def _gate(g: GateResult) -> dict[str, Any]:
    return {
        "id": g.id,
        "stage": g.stage,
        "title": g.title,
        "status": g.status.value,
        "stopped_run": g.stopped_run,
        "duration_s": g.duration_s,
        "counts": _counts(g.checks),
        "notes": list(g.notes),
        "checks": [_check(c) for c in g.checks],
    }


def build_summary(run: RunResult) -> dict[str, Any]:
    """The summary as plain data (not yet sanitised for strict JSON)."""
    all_checks = tuple(c for g in run.gates for c in g.checks)
    return {
        "format": SUMMARY_FORMAT,
        "run_id": run.run_id,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "verdict": run.verdict.value,
        "exit_code": run.exit_code,
        "reasons": list(run.reasons),
        "policy": run.policy,
        "golden_sets": list(run.golden_sets),
        "seed": run.seed,
        "counts": _counts(all_checks),
        "targets": [_target(t) for t in run.targets],
        "gates": [_gate(g) for g in run.gates],
        "performance": summarize_performance(run).to_dict(),
    }


def render_summary_json(run: RunResult) -> str:
    """summary.json's text: strict JSON, two-space indent, trailing newline."""
    return dumps(build_summary(run), indent=2) + "\n"
