"""From check statuses to PROMOTE / HOLD / ROLLBACK, with the reasons that decided it.

Any blocking FAIL → ROLLBACK. Otherwise any ERROR, any blocking SKIP, any blocking check left
undecided (asked, but the evidence did not answer it) or any advisory FAIL → HOLD. Otherwise
PROMOTE. An ERROR never yields PROMOTE: a check that could not run is not a pass, and a question
the evidence left open is not a "no regression".
"""

from __future__ import annotations

from gatekeeper.results import CheckResult, GateResult, Status, Verdict


MAX_REASON_CHARS = 240


def _line(c: CheckResult) -> str:
    reason = c.reason if len(c.reason) <= MAX_REASON_CHARS else c.reason[: MAX_REASON_CHARS - 1] + "…"
    status = "UNDECIDED" if c.undecided else c.status.value
    return f"{c.id}: {status}{'' if c.blocking else ' (advisory)'} — {reason}"


def decide(gates: list[GateResult]) -> tuple[Verdict, list[str]]:
    """The verdict and the reasons (the checks that decided it, most severe first)."""
    checks = [c for g in gates for c in g.checks]
    blocking_fail = [c for c in checks if c.status == Status.FAIL and c.blocking]
    if blocking_fail:
        return Verdict.ROLLBACK, [_line(c) for c in blocking_fail]
    hold = [c for c in checks if c.status == Status.ERROR or (c.status == Status.SKIP and c.blocking)
            or (c.status == Status.FAIL and not c.blocking) or (c.undecided and c.blocking)]
    if hold:
        return Verdict.HOLD, [_line(c) for c in hold]
    if not checks:
        return Verdict.HOLD, ["no checks ran"]
    return Verdict.PROMOTE, [f"all {len(checks)} checks passed or were advisory"]
