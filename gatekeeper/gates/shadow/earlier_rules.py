"""Gate 5's rules read from what the earlier gates of this run found (each a check
`shadow.rule.<name>`, beside the pair rules of `gatekeeper/traffic/rules.py`).

Three rules: `deterministic_probe` (the `Reply with
exactly: OK` canary of gates 1 and 3), `logit_drift` (gate 2's checks beyond their approved
tolerances), `kernel_or_dtype_change` (gate 1: an unexplained execution-path change,
`startup.path_change` — a fallback line the reference does not print, another backend or switch —
or an execution path other than the one declared).

A rule whose evidence does not exist in this run (gate 2 did not run) is a SKIP saying so, never a PASS.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from gatekeeper.detection import DetectionLimit
from gatekeeper.gates.golden.checks import CANARY_CASE
from gatekeeper.gates.numerics import checks as numerics
from gatekeeper.gates.startup import checks as startup
from gatekeeper.results import CheckResult, GateResult, Status
from gatekeeper.traffic.rules import RuleOutcome

EARLIER_RULES = ("deterministic_probe", "logit_drift", "kernel_or_dtype_change")
_FALLBACK = re.compile(r"(?i)fall(ing)? ?back|not supported|naive")


def _checks(earlier: Sequence[GateResult], gate: str) -> list[CheckResult] | None:
    for g in earlier:
        if g.id == gate and g.coverage is not None:
            return list(g.checks)
    return None


def earlier_rule(name: str, earlier: Sequence[GateResult]) -> RuleOutcome:
    """A rule read from the earlier gates' checks in this run."""
    if name == "deterministic_probe":
        found = [c for g in (startup.GATE, "golden") for c in (_checks(earlier, g) or [])
                 if c.id in (startup.CANARY_CANDIDATE, CANARY_CASE)]
        if not found:
            return RuleOutcome(name, Status.SKIP, "not judged: neither gate 1's nor gate 3's canary ran in this run")
        bad = [c for c in found if c.status is Status.FAIL]
        if bad:
            return RuleOutcome(name, Status.FAIL, f"{bad[0].id}: {bad[0].reason}", tuple((c.id, c.status.value) for c in bad))
        passed = [c for c in found if c.status is Status.PASS]
        if not passed:  # both sides missed it (WARN) or it could not run (ERROR): nothing was judged
            return RuleOutcome(name, Status.SKIP, "not judged: no canary passed in this run ("
                               + ", ".join(f"{c.id} {c.status.value}" for c in found) + ")")
        return RuleOutcome(name, Status.PASS, "the deterministic canary passed: " + ", ".join(c.id for c in passed),
                           limit=_stated(passed))
    if name == "logit_drift":
        checks = _checks(earlier, numerics.GATE)
        if checks is None:
            return RuleOutcome(name, Status.SKIP, "not judged: gate 2 (numerics) did not run in this run")
        checks = [c for c in checks if numerics.is_drift(c)]  # what gate 2 could judge is not a drift figure
        bad = [c for c in checks if c.status is Status.FAIL]
        if bad:
            return RuleOutcome(name, Status.FAIL, f"gate 2: {', '.join(c.id for c in bad)} beyond the approved range",
                               tuple((c.id, c.reason[:120]) for c in bad))
        drift = [c for c in checks if c.status is Status.PASS and c.id != numerics.NAN_INF]
        if not drift:  # NaN/Inf alone is no drift figure
            return RuleOutcome(name, Status.SKIP, "not judged: gate 2 judged no drift figure")
        return RuleOutcome(name, Status.PASS, "gate 2's drift figures are within their approved tolerances",
                           limit=_stated(drift))
    checks = _checks(earlier, startup.GATE)
    if checks is None:
        return RuleOutcome(name, Status.SKIP, "not judged: gate 1 (startup) did not run in this run")
    rows = []
    # startup.path_change judges fallback lines with the policy's explanations; the raw log lines
    # are read only for a run whose gate 1 did not judge path changes.
    judged_changes = any(c.id == startup.PATH_CHANGE and c.status is not Status.SKIP for c in checks)
    for c in checks:
        if c.id in (startup.EXECUTION_PATH, startup.PATH_CHANGE) and c.status is Status.FAIL:
            rows.append((c.id, c.reason[:160]))
        if judged_changes:
            continue
        if c.id in (startup.LOG_RULES, startup.NEW_WARNINGS) and c.status in (Status.WARN, Status.FAIL):
            for ev in c.evidence:
                lines = [str(r[-1]) for r in getattr(ev, "rows", ())] + [str(x) for x in getattr(ev, "lines", ())]
                rows += [(c.id, line[:160]) for line in lines if _FALLBACK.search(line)]
    if rows:
        return RuleOutcome(name, Status.FAIL, f"{rows[0][0]}: {rows[0][1]}", tuple(rows[:20]))
    judged = [c for c in checks if c.id in (startup.LOG_RULES, startup.EXECUTION_PATH, startup.PATH_CHANGE)
              and c.status is not Status.SKIP]
    if not judged:
        return RuleOutcome(name, Status.SKIP, "not judged: no candidate log and no stated execution path to read")
    return RuleOutcome(name, Status.PASS, "no fallback the reference does not print; the execution path is as judged",
                       limit=_stated(sorted(judged, key=lambda c: c.id != startup.PATH_CHANGE)))


def _stated(passed: Sequence[CheckResult]) -> DetectionLimit | None:
    """A rule read from earlier checks states what the first of them that states a limit would have
    caught (the candidate's canary, gate 2's max |Δ logprob|, gate 1's path change)."""
    return next((c.detection_limit for c in passed if c.detection_limit is not None), None)
