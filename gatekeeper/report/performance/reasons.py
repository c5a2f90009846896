"""performance.html's own reasons: what the performance gate decided and what it left open.

The verdict box of performance.html states the performance gate's outcome instead of pointing
at the correctness report: its checks that went against the run (a FAIL, an ERROR, a blocking
SKIP or undecided check), then its advisory checks that are undecided, WARN or FAIL (or skipped,
when nothing else is to say), each linked to the check and cut to a line; or why the gate did
not run (left out, or stopped by an earlier gate). The run's verdict also rests on the
correctness gates, whose reasons are on the other page; `PerfReasons.elsewhere` says so when any
of the run's reasons are there.
"""

from __future__ import annotations

from dataclasses import dataclass

from gatekeeper.report.performance.gate_table import performance_gate
from gatekeeper.report.statuses import badge_status
from gatekeeper.results import CheckResult, RunResult, Status, Verdict
from gatekeeper.verdict import check_verdict

MAX_REASON_CHARS = 124  # a line each at 1280 px: the full reason is in the check


@dataclass(frozen=True)
class PerfReasons:
    """The performance gate's status line and its reasons as (link to the check, or None; text)."""

    status: str  # e.g. "performance gate: FAIL · 3 PASS · 1 FAIL · 2 WARN", or why it did not run
    reasons: tuple[tuple[str | None, str], ...]
    elsewhere: str  # "" or a sentence, ending where the page links the correctness report, saying the verdict rests there too


def _line(c: CheckResult) -> tuple[str | None, str]:
    text = f"{c.id}: {badge_status(c)}{'' if c.blocking else ' (advisory)'} — {c.reason}"
    return f"#check-{c.id}", text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 1] + "…"


def _open_question(c: CheckResult) -> bool:
    """An advisory check that did not pass: shown, though it does not decide the verdict."""
    return c.undecided or c.status in (Status.WARN, Status.FAIL, Status.ERROR, Status.SKIP)


def performance_reasons(run: RunResult) -> PerfReasons:
    """The performance gate's own reasons for `run`."""
    gate = performance_gate(run)
    others = [c for g in run.gates if g.excluded is None and g is not gate for c in g.checks]
    ran = gate is not None and gate.excluded is None and gate.coverage is not None
    elsewhere = "" if not any(check_verdict(c) is not Verdict.PROMOTE for c in others) else (
        f"The run's verdict {'also ' if ran else ''}rests on the correctness gates: their reasons are in the")
    if gate is None:
        return PerfReasons("performance gate: not in this run", (), elsewhere)
    if gate.excluded is not None:
        return PerfReasons(f"performance gate: not run ({gate.excluded})", (), elsewhere)
    if gate.coverage is None:  # stopped before it started: its checks only say so
        why = "; ".join(c.reason.removeprefix("not run: ") for c in gate.checks) or "an earlier gate stopped the run"
        return PerfReasons(f"performance gate: not run ({why})", (), elsewhere)
    against = [c for c in gate.checks if check_verdict(c) is not Verdict.PROMOTE]
    advisory = [c for c in gate.checks if c not in against and _open_question(c)]
    if len(advisory) > sum(1 for c in advisory if c.status is Status.SKIP):  # an advisory skip is news only alone
        advisory = [c for c in advisory if c.status is not Status.SKIP]
    undecided = sum(1 for c in gate.checks if c.undecided)
    counts = {s.value: sum(1 for c in gate.checks if c.status is s and not c.undecided) for s in Status}
    said = " · ".join(f"{n} {name}" for name, n in [*counts.items(), ("UNDECIDED", undecided)] if n)
    head = gate.status.value  # an undecided blocking check is a WARN that HOLDs: named as such, unless worse is there
    if gate.status in (Status.WARN, Status.PASS) and any(c.undecided and c.blocking for c in gate.checks):
        head = "UNDECIDED"
    status = f"performance gate: {head}" + (f" · {said}" if said else "")
    lines = [_line(c) for c in against + advisory]
    if not lines:
        lines = [(None, f"all {len(gate.checks)} checks of the performance gate passed")]
    return PerfReasons(status, tuple(lines), elsewhere)
