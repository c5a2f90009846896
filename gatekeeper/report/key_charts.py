"""The "Key charts" section: the charts that carry each gate's result, shown before any check.

A gate marks these itself (`Evidence.is_key`, gatekeeper/evidence.py): gate 2's logprob-delta
histogram, gate 4's decay curve and needle heatmap, gate 5's sequential evidence per canary
stage, the performance gate's ratios with their intervals and its capacity curves. Nothing here
picks a chart by its check id or title.

Charts of checks that went against the run (a FAIL, an ERROR, a blocking SKIP or undecided
check: `verdict.check_verdict`) come first, then the other charts of gates that hold such a check,
then the rest, each group in gate and check order. A gate's key
`Intervals` are drawn together as one forest plot, one row per interval, each coloured by its
check's status, so every budgeted figure of the performance gate sits on one axis.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from gatekeeper.evidence import Interval, Intervals
from gatekeeper.report import charts
from gatekeeper.report.evidence_view import EvidenceView, evidence_view
from gatekeeper.report.statuses import badge_status
from gatekeeper.results import CheckResult, GateResult, Verdict
from gatekeeper.verdict import check_verdict


@dataclass(frozen=True)
class KeyChartView:
    """One key chart with the gate and the check it comes from."""

    gate: str  # e.g. "4. Long context and tool calling"
    check_id: str
    status: str  # the check's status, or "UNDECIDED"
    view: EvidenceView
    against: bool  # the check went against the run (it is among the verdict's reasons)
    gate_against: bool = False  # its gate holds a check that went against the run


def _forest(gate: GateResult, found: list[tuple[CheckResult, Intervals]]) -> KeyChartView:
    """A gate's key intervals as one chart; it points at the first check against the run, else the first."""
    rows: list[tuple[Interval, str]] = [(r, badge_status(c)) for c, ev in found for r in ev.rows]
    first = found[0][0]
    worst = next((c for c, _ in found if check_verdict(c) is not Verdict.PROMOTE), first)
    title = f"{found[0][1].x_label}, each with its interval and limit"
    chart = charts.intervals_svg(rows, found[0][1].reference, found[0][1].x_label, title)
    return KeyChartView(f"{gate.stage}. {gate.title}", worst.id, badge_status(worst), EvidenceView("chart", title, chart=chart),
                        worst is not first or check_verdict(first) is not Verdict.PROMOTE)


def key_charts(gates: Iterable[GateResult]) -> tuple[KeyChartView, ...]:
    """The key charts of the gates that ran, those of checks against the run first."""
    out: list[KeyChartView] = []
    for g in gates:
        if g.excluded is not None:
            continue
        intervals: list[tuple[CheckResult, Intervals]] = []
        first = forest_at = len(out)  # the forest plot goes where the gate's first key interval is
        for c in g.checks:
            for ev in c.evidence:
                if ev.is_key and isinstance(ev, Intervals):
                    forest_at = forest_at if intervals else len(out)
                    intervals.append((c, ev))
                elif ev.is_key:
                    out.append(KeyChartView(f"{g.stage}. {g.title}", c.id, badge_status(c), evidence_view(ev),
                                            check_verdict(c) is not Verdict.PROMOTE))
        if intervals:
            out.insert(forest_at, _forest(g, intervals))
        if any(check_verdict(c) is not Verdict.PROMOTE for c in g.checks):
            out[first:] = [replace(k, gate_against=True) for k in out[first:]]
    return tuple(sorted(out, key=lambda k: (not k.against, not k.gate_against)))  # stable: gate, check order within
