"""A `RunComparison` as JSON (`gatekeeper compare --json`, compare.json): every list, unabridged.

Format `gatekeeper.compare/1`. Numbers are numbers (non-finite ones spelled as strings by the
report package's strict-JSON writer); each check carries status, blocking and reason.
"""

from __future__ import annotations


from gatekeeper.json_types import JsonObject
from gatekeeper.compare.diff import RunComparison, status_label
from gatekeeper.run_summary import RunSummary
from gatekeeper.report.jsonable import dumps
from gatekeeper.results import CheckResult

FORMAT = "gatekeeper.compare/1"


def _run(r: RunSummary) -> JsonObject:
    return {"dir": str(r.path), "run_id": r.run_id, "verdict": r.verdict.value, "headline": r.headline,
            "policy": r.policy, "seed": r.seed, "gatekeeper_version": r.gatekeeper_version, "candidate": r.candidate}


def _check(c: CheckResult) -> JsonObject:
    return {"id": c.id, "status": status_label(c), "blocking": c.blocking, "reason": c.reason}


def comparison_json(c: RunComparison) -> JsonObject:
    """The comparison as plain data."""
    return {
        "format": FORMAT,
        "a": _run(c.a),
        "b": _run(c.b),
        "worse": bool(c.worse),
        "num_common": c.num_common,
        "plan_differences": [{"name": d.name, "a": d.a, "b": d.b} for d in c.plan_differences],
        "got_worse": [{"id": w.check_id, "why": w.why} for w in c.worse],
        "changed": [{"id": s.b.id, "a": _check(s.a), "b": _check(s.b), "worse": s.worse} for s in c.changed],
        "new_findings": [_check(x) for x in c.new_findings],
        "only_a": [_check(x) for x in c.only_a],
        "only_b": [_check(x) for x in c.only_b],
        "metric_deltas": [{"check": d.check_id, "metric": d.name, "a": d.a, "b": d.b, "delta": d.delta} for d in c.deltas],
        "intervals": [{"check": i.check_id, "metric": i.name, "a": list(i.a), "b": list(i.b), "overlap": i.overlap}
                      for i in c.intervals],
    }


def to_text(c: RunComparison) -> str:
    """compare.json's text: strict JSON, two-space indent, trailing newline."""
    return dumps(comparison_json(c), indent=2) + "\n"
