"""From check statuses to PROMOTE / HOLD / ROLLBACK, with the reasons that decided it.

Any blocking FAIL → ROLLBACK. Otherwise any ERROR, any blocking SKIP, any blocking check left
undecided (asked, but the evidence did not answer it) or any advisory FAIL → HOLD. Otherwise
PROMOTE. An ERROR never yields PROMOTE: a check that could not run is not a pass, and a question
the evidence left open is not a "no regression".

A PROMOTE's reason says what it rests on: the blocking checks that passed, and beside them the
advisory WARNs and the advisory checks left undecided; then each near miss (a check that passed
close to firing: gate 5's sequential tests past half their threshold on a log scale), so a green
headline never hides how close it came. A run that left gates out (`--gates`, a
policy that disables them) is PARTIAL whatever its verdict: the first reason names the gates not
run (the first after the check that decided a HOLD or ROLLBACK, the very first on a PROMOTE), so no
headline reads as if every question had been asked.

Checks that FAIL or ERROR for one cause (`signature.py`: twenty golden cases that each lost their
last character) make one reason: the first check's line, then how many more share its cause and
which, so the second cause is not the twenty-first line.
"""

from __future__ import annotations

from collections.abc import Callable

from gatekeeper.results import CheckResult, GateResult, Status, Verdict
from gatekeeper.signature import group_failures


MAX_REASON_CHARS = 240
MAX_NAMED = 5  # a reason that stands for several checks of one cause names this many of the others


def _line(c: CheckResult) -> str:
    reason = c.reason if len(c.reason) <= MAX_REASON_CHARS else c.reason[: MAX_REASON_CHARS - 1] + "…"
    status = "UNDECIDED" if c.undecided else c.status.value
    return f"{c.id}: {status}{'' if c.blocking else ' (advisory)'} — {reason}"


def check_verdict(c: CheckResult) -> Verdict:
    """What this check alone makes of a run: ROLLBACK (a blocking FAIL), HOLD (an ERROR, a blocking
    SKIP, a blocking check left undecided, an advisory FAIL) or PROMOTE (nothing against it)."""
    if c.status == Status.FAIL and c.blocking:
        return Verdict.ROLLBACK
    if c.status in (Status.ERROR, Status.FAIL) or (c.blocking and (c.status == Status.SKIP or c.undecided)):
        return Verdict.HOLD
    return Verdict.PROMOTE


def decide(gates: list[GateResult], restricted: tuple[str, ...] = (),
           next_step: Callable[[CheckResult], str | None] | None = None) -> tuple[Verdict, list[str]]:
    """The verdict and the reasons (the checks that decided it, most severe first; a partial
    run's gates not run, and what its flags left out within its gates (`restricted`), first of all).
    A HOLD's reasons end in "Next: …" where `next_step` names one (each step said once)."""
    partial = [partial_line(gates)] if any(g.excluded is not None for g in gates) else []
    partial += [f"PARTIAL: {what}; this verdict covers those only" for what in restricted]
    checks = [c for g in gates if g.excluded is None for c in g.checks]
    blocking_fail = [c for c in checks if check_verdict(c) == Verdict.ROLLBACK]
    if blocking_fail:  # what decided it first; that the run was partial right after
        lines = [_grouped(group) for group in group_failures(blocking_fail)]
        return Verdict.ROLLBACK, [lines[0], *partial, *lines[1:]]
    hold = [c for c in checks if check_verdict(c) == Verdict.HOLD]
    if hold:
        lines = _with_steps(hold, next_step)
        return Verdict.HOLD, [lines[0], *partial, *lines[1:]]
    if not checks:
        return Verdict.HOLD, partial + ["no checks ran"]
    return Verdict.PROMOTE, partial + [_promote_line(checks)] + [f"near miss: {_line(c)}" for c in checks if c.near_miss]


def _grouped(group: tuple[CheckResult, ...]) -> str:
    """One reason for the checks of one cause (`signature.group_failures`): the first check's line,
    then how many more share its cause and which."""
    first, rest = group[0], group[1:]
    if not rest:
        return _line(first)
    named = ", ".join(c.id for c in rest[:MAX_NAMED]) + (", …" if len(rest) > MAX_NAMED else "")
    return _line(first) + f" (and {len(rest)} more check{'s' if len(rest) != 1 else ''} of this cause: {named})"


def _with_steps(checks: list[CheckResult], next_step: Callable[[CheckResult], str | None] | None) -> list[str]:
    """Each cause's line (checks of one cause in one line), the first line of each distinct next
    step ending in "Next: …"."""
    said: set[str] = set()
    lines = []
    for group in group_failures(checks):
        step = next_step(group[0]) if next_step is not None else None
        lines.append(_grouped(group) + (f" Next: {step}" if step and step not in said else ""))
        said.add(step or "")
    return lines


def partial_line(gates: list[GateResult]) -> str:
    """"PARTIAL: …" naming the gates not run and why, and the ones the verdict covers."""
    why: dict[str, list[str]] = {}
    for g in gates:
        if g.excluded is not None:
            why.setdefault(g.excluded, []).append(g.id)
    ran = [g.id for g in gates if g.excluded is None]
    out = sum(len(ids) for ids in why.values())
    groups = "; ".join(", ".join(ids) + f": {w}" for w, ids in why.items())
    return f"PARTIAL: {out} of {len(gates)} gates not run ({groups}); this verdict covers {', '.join(ran) or 'no gate'} only"


def _promote_line(checks: list[CheckResult]) -> str:
    blocking = sum(1 for c in checks if c.blocking)
    warn = sum(1 for c in checks if c.status == Status.WARN and not c.undecided)
    undecided = sum(1 for c in checks if c.undecided)
    skipped = sum(1 for c in checks if c.status == Status.SKIP)
    extra = [f"{n} {what}" for n, what in ((warn, "WARN"), (undecided, "undecided (advisory)"),
                                           (skipped, "SKIP (advisory)")) if n]
    return (f"all {blocking} blocking checks passed" + (f"; {', '.join(extra)}" if extra else "")
            + f" ({len(checks)} checks)")
