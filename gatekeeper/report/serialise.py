"""The JSON forms of a check and a gate, shared by summary.json and records.jsonl.

`check_json(check)` is a check as summary.json shows it (docs/summary-schema.md): id, status,
blocking, family, reason, metrics, duration_s. `check_json(check, standalone=True)` is the same
object as one line of records.jsonl needs it: read on its own, it also says which gate the check
belongs to (after `id`) and carries the evidence (last, being the bulk of the line).

Values are returned as they are; `jsonable.dumps` makes them strict JSON when the file is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gatekeeper.json_types import JsonObject
from gatekeeper.detection import POWER, DetectionLimit
from gatekeeper.results import CheckResult, Coverage, Evidence, GateResult, RetryCount, Status


def evidence_json(evidence: Evidence) -> JsonObject:
    """One evidence item: kind, title, data, and `"key": true` for a key chart (absent otherwise)."""
    return {"kind": evidence.kind, "title": evidence.title, "data": evidence.data, **({"key": True} if evidence.is_key else {})}


def check_json(check: CheckResult, *, standalone: bool = False) -> JsonObject:
    """A check as a JSON object; `standalone` adds its gate and its evidence (records.jsonl)."""
    d: JsonObject = {"id": check.id}
    if standalone:
        d["gate"] = check.gate
    d |= {
        "status": check.status.value,
        "blocking": check.blocking,
        "family": check.family,
        "reason": check.reason,
        "metrics": check.metrics,
        "duration_s": check.duration_s,
        "finished_at": check.finished_at,
        "judgement": check.judgement.value,
        **({"undecided": True} if check.undecided else {}),
        **({"near_miss": True} if check.near_miss else {}),
        **({"detection_limit": limit_json(check.detection_limit)} if check.detection_limit is not None else {}),
    }
    if standalone:
        d["evidence"] = [evidence_json(e) for e in check.evidence]
    return d


def limit_json(limit: DetectionLimit) -> JsonObject:
    """A check's detection limit (`detection.py`)."""
    return {"effect": limit.effect, "measure": limit.measure, "unit": limit.unit, "power": limit.power,
            "materiality": limit.materiality, "judged": limit.judged, "text": limit.text()}


def limit_of(d: Mapping[str, Any] | None) -> DetectionLimit | None:
    """`limit_json` read back (None when absent)."""
    if not d:
        return None
    return DetectionLimit(float(d["effect"]), str(d["measure"]), str(d.get("unit", "share")), float(d.get("power", POWER)),
                          None if d.get("materiality") is None else float(d["materiality"]), int(d.get("judged", 0)))


def counts_json(counts: Mapping[Status, int]) -> dict[str, int]:
    """Checks by status, keyed by the status's name."""
    return {status.value: n for status, n in counts.items()}


def coverage_json(coverage: Coverage) -> JsonObject:
    """A gate's judged coverage: counts, the reasons items went unjudged, the share and its floor, and
    (when any) the items not asked because neither target has a capability they need."""
    out: JsonObject = {"judged": coverage.judged, "total": coverage.total, "share": coverage.share,
                           "min_share": coverage.min_share, "unjudged": dict(coverage.unjudged)}
    if coverage.not_asked:
        out["not_asked"] = dict(coverage.not_asked)
    if coverage.lost_to:
        out["lost_to"] = dict(coverage.lost_to)
    return out


def retry_json(count: RetryCount) -> JsonObject:
    """One target's requests in a gate and the client's retries for them."""
    return {"role": count.role, "sent": count.sent, "retried": count.retried, "reconnected": count.reconnected,
            "rate_limited": count.rate_limited}


def gate_json(gate: GateResult, counts: Mapping[Status, int]) -> JsonObject:
    """A gate as summary.json shows it, its checks (without evidence) included."""
    return {
        "id": gate.id,
        "stage": gate.stage,
        "title": gate.title,
        "status": gate.status.value,
        "stopped_run": gate.stopped_run,
        "started_at": gate.started_at,
        "duration_s": gate.duration_s,
        "counts": counts_json(counts),
        "coverage": None if gate.coverage is None else coverage_json(gate.coverage),
        "notes": list(gate.notes),
        "retries": [retry_json(c) for c in gate.retries],
        "checks": [check_json(c) for c in gate.checks],
        **({"reused": True} if gate.reused else {}),
    }
