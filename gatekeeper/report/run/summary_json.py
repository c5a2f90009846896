"""summary.json: the run in a versioned, documented JSON format (docs/summary-schema.md).

`format` is "gatekeeper.summary/1". Within a major version fields are only ever added; a field
is never removed or given a new meaning without bumping the number. Evidence (long texts,
histograms) stays out of this file: it is in the HTML report and in records.jsonl.
"""

from __future__ import annotations

import dataclasses

from gatekeeper import __version__
from gatekeeper.json_types import JsonObject
from gatekeeper.report.identity import identify
from gatekeeper.report.jsonable import dumps
from gatekeeper.report.run.data import ReportData
from gatekeeper.report.run.interface import Renderer
from gatekeeper.report.serialise import counts_json, gate_json
from gatekeeper.results import GateResult, RunResult, TargetInfo

SUMMARY_FORMAT = "gatekeeper.summary/1"
SUMMARY_SCHEMA = "https://gatekeeper.dev/schemas/summary.schema.json"  # its `$id`; the file ships in gatekeeper/schemas/


def _target(t: TargetInfo) -> JsonObject:
    # A target that was not probed keeps the documented empty object, not null.
    capabilities = {} if t.capabilities is None else t.capabilities.to_dict()
    return {
        "role": t.role,
        "kind": t.kind,
        "description": t.description,
        "base_url": t.base_url,
        "model": t.model,
        "version": t.version,
        "startup_s": t.startup_s,
        "capabilities": capabilities,
        "log_path": t.log_path,
        "dtype": t.dtype,
        "declared": dict(t.declared),
        "observed": dict(t.observed),
    }


def summary_of(data: ReportData) -> JsonObject:
    """The summary as plain data (not yet sanitised for strict JSON)."""
    run = data.run
    return {
        "$schema": SUMMARY_SCHEMA,
        "format": SUMMARY_FORMAT,
        "gatekeeper_version": __version__,
        "run_id": run.run_id,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "verdict": run.verdict.value,
        "headline": run.headline,
        **({"identity": who.to_json()} if (who := identify(run.targets)) is not None else {}),
        "exit_code": run.exit_code,
        "reasons": list(run.reasons),
        "partial": run.is_partial,
        "restricted": list(run.restricted),
        "gates_not_run": [{"id": g.id, "why": g.excluded} for g in run.partial],
        "policy": run.policy,
        "golden_sets": list(run.golden_sets),
        "seed": run.seed,
        "counts": counts_json(data.counts),
        "correctness_table": [dataclasses.asdict(row) for row in data.correctness],
        "targets": [_target(t) for t in run.targets],
        "gates": [gate_json(g, counts) for g, counts in data.gates()],
        "performance": data.performance.to_dict(),
        "hooks": [h.to_dict() for h in run.hooks],
        **(_rejudged(run) if run.rejudged_from else _resumed(run.gates, run.redone)),
        **({"reference_cache": dataclasses.asdict(run.reference_cache)} if run.reference_cache else {}),
    }


def _rejudged(run: RunResult) -> JsonObject:
    """For a re-judged run (`gatekeeper rejudge`): the run it judged, and the measured gates carried over."""
    return {"rejudged": {"from": run.rejudged_from, "carried_over": [g.id for g in run.gates if g.reused]}}


def _resumed(gates: tuple[GateResult, ...], redone: tuple[str, ...]) -> JsonObject:
    """For a resumed run (`gatekeeper run --resume`): which gates came from the interrupted run's
    records, which ran now, and which of those a finished run asked again (`--redo`); nothing for a
    run that was not resumed."""
    if not any(g.reused for g in gates) and not redone:
        return {}
    return {"resumed": {"reused": [g.id for g in gates if g.reused], "ran": [g.id for g in gates if not g.reused and g.excluded is None],
                        **({"redone": list(redone)} if redone else {})}}


class SummaryJsonRenderer(Renderer):
    """summary.json: strict JSON, two-space indent, trailing newline."""

    name = "summary_json"
    filename = "summary.json"

    def render(self, data: ReportData) -> str:
        """summary.json's text."""
        return dumps(summary_of(data), indent=2) + "\n"
