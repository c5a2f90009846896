"""A cell's execution-path record in the shape of docs/bug-classes.md#path-record, from its run's
summary.json (read by `gatekeeper.run_summary`) and cell.json.

    model: …            runtime_version: …        hardware: …
    parallelism: {tp}   backend: {attention, allreduce}   fusion: {…}
    dtypes: {activation, kv_cache, rmsnorm_weight}
    result: {deterministic_probe, json_probe, tool_probe}

plus what the path was declared as and what the target's own log and /metrics showed
(`targets/observed.py`), so a record says both what was asked for and what ran. A probe is
`pass`, `fail`, `not judged` (only skipped checks) or `not run`: deterministic is gate 1's
canary on the candidate; json and tool are the golden and long-context checks of those families.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from gatekeeper.json_types import JsonObject
from gatekeeper.atomic import write_atomic
from gatekeeper.gates.longctx import checks as longctx_checks
from gatekeeper.gates.startup.checks import CANARY_CANDIDATE
from gatekeeper.results import CheckResult, Status
from gatekeeper.run_summary import RunSummary, SummaryError, read_summary

RECORD_FILE = "path-record.yaml"

_JSON = ("json", "json_enforced")
_TOOLS = ("tool_call", "tool_enforced")


def _probe(checks: list[CheckResult]) -> str:
    if not checks:
        return "not run"
    if any(c.status in (Status.FAIL, Status.ERROR) for c in checks):
        return "fail"
    return "not judged" if all(c.status is Status.SKIP for c in checks) else "pass"  # skips alone are no pass


def path_record(summary: RunSummary, cell: dict[str, Any]) -> JsonObject:
    """The record for the candidate of one cell run."""
    cand = summary.target("candidate")
    axes = dict(cell.get("axes") or {})
    declared = {**dict(cell.get("declared") or {}), **(cand.declared if cand else {})}
    observed = dict(cand.observed) if cand else {}

    def said(*keys: str) -> Any:
        for source in (observed, declared, axes):
            for k in keys:
                if source.get(k) not in (None, ""):
                    return source[k]
        return None

    checks = list(summary.checks)
    canary = [c for c in checks if c.id == CANARY_CANDIDATE]
    json_checks = [c for c in checks if c.family in _JSON or c.id in longctx_checks.JSON_CHECKS]
    tool_checks = [c for c in checks if c.family in _TOOLS or c.id in longctx_checks.TOOL_CHECKS]
    fusion = {k: v for k, v in axes.items() if "fus" in k or k.endswith("_rms")}
    if "fused_norm" in observed:
        fusion["fused_norm"] = observed["fused_norm"]
    return {
        "model": cand.model if cand else None,
        "runtime_version": cand.version if cand else None,
        "hardware": said("hardware", "label.hardware") or "unstated",
        "parallelism": {"tp": said("tp")},
        "backend": {"attention": said("attention", "attention_backend"), "allreduce": said("allreduce")},
        "fusion": fusion,
        "dtypes": {"activation": said("dtype"), "kv_cache": said("kv_cache_dtype"),
                   "rmsnorm_weight": said("rmsnorm_weight_dtype", "rmsnorm_weight")},
        "result": {"deterministic_probe": _probe(canary), "json_probe": _probe(json_checks),
                   "tool_probe": _probe(tool_checks)},
        "verdict": summary.verdict.value,
        "declared": declared,
        "observed": observed,
    }


def write_record(run_dir: Path) -> Path | None:
    """Write `path-record.yaml` into a cell's run directory from its summary.json and cell.json;
    None, writing nothing, when either cannot be read (a `SummaryError` for the summary: the run
    left none, or none that reads as one)."""
    try:
        summary = read_summary(run_dir)
        cell = json.loads((run_dir / "cell.json").read_text())
    except (SummaryError, OSError, json.JSONDecodeError):
        return None
    return write_atomic(run_dir / RECORD_FILE, yaml.safe_dump(path_record(summary, cell), sort_keys=False, allow_unicode=True))
