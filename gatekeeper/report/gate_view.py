"""A gate's section and the failure cards, as both HTML pages show them.

Both pages (correctness.html for the correctness gates, performance.html for the performance
gate) read the same way after their header and their own table: the key charts (key_charts.py),
the failures — the checks that went against the run (`verdict.check_verdict`), one card per cause
(signature.py): two examples in full, the rest folded as one line each — and then every gate, its
other checks as before, its passing ones folded. This module turns checks and gates into those
plain frozen values (formatted strings, CSS class names, evidence views with ready SVG charts),
so the templates only loop and branch; nothing here writes HTML except the charts (charts.py),
which escape their own text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from gatekeeper.evidence import Evidence, Intervals
from gatekeeper.report import charts
from gatekeeper.report.evidence_view import EvidenceView, clip, evidence_view, fmt_metric, fmt_seconds
from gatekeeper.report.statuses import StatusCounts, badge_status, coverage_text, shown_counts
from gatekeeper.results import CheckResult, GateResult, Status, Verdict
from gatekeeper.signature import group_failures, signature
from gatekeeper.verdict import check_verdict

_PASSED = (Status.PASS, Status.WARN)
MAX_LINE_CHARS = 120  # a folded check's reason, on one line at 1280 px
NUM_EXAMPLES = 2  # checks a failures card with one cause shows in full; the rest fold to a line each


@dataclass(frozen=True)
class CheckView:
    """One check as shown: badge, blocking flag, reason, metrics, evidence."""

    id: str
    status: str
    blocking: str
    reason: str
    family: str
    duration: str
    metrics: tuple[tuple[str, str], ...]
    evidence: tuple[EvidenceView, ...]
    open: bool
    judgement: str = "exact"
    is_failure: bool = False  # it went against the run: shown in full under "Failures", pointed at in its gate
    badge: str = ""  # the status as its badge reads: "UNDECIDED" for a check the evidence left open
    limit: str = ""  # its detection limit in words ("would catch ≥ 9.5% of …"), "" when it states none


@dataclass(frozen=True)
class FoldedCheck:
    """A check of a failures card beyond its examples: one line, its anchor kept."""

    id: str
    badge: str
    blocking: str
    line: str  # its reason, cut to one line


@dataclass(frozen=True)
class FailureGroup:
    """One failures card: the checks of one gate that went against the run for one cause
    (signature.py). A group of one is the check's ordinary card; a larger one shows `examples` in
    full and `rest` folded, and names the `cause` its checks' reasons share."""

    anchor: str  # the card's element id: "cause-<its first check's id>"
    gate: str
    badge: str
    family: str
    cause: str
    examples: tuple[CheckView, ...]
    rest: tuple[FoldedCheck, ...] = ()

    @property
    def size(self) -> int:
        """How many checks the card stands for."""
        return len(self.examples) + len(self.rest)

    @property
    def grouped(self) -> bool:
        """More than one check: shown as one card for the cause, not as the check's own card."""
        return self.size > 1


@dataclass(frozen=True)
class GateView:
    """One gate's section."""

    id: str
    stage: int
    title: str
    lead: tuple[tuple[str, bool], ...]  # the description's first paragraph, as (text, is_code) runs
    about: tuple[tuple[tuple[str, bool], ...], ...]  # its other paragraphs, folded under "about this gate"
    status: str
    stopped_run: bool
    duration: str
    counts: tuple[tuple[str, int], ...]
    coverage: str
    notes: tuple[str, ...]
    family_chart: Markup | None
    checks: tuple[CheckView, ...]
    moved: tuple[FailureGroup, ...] = ()  # its checks shown under Failures, by card


def _flatten(metrics: dict[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    for key, value in metrics.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            rows += _flatten(value, name + ".")
        else:
            rows.append((name, fmt_metric(str(key), value)))
    return rows


def paragraphs(text: str) -> tuple[str, ...]:
    """Reflow a docstring: blank lines split paragraphs, wrapped lines are joined, and a line
    that starts a list item ("- " or "* ") starts a new line."""
    out: list[str] = []
    for block in text.strip().split("\n\n"):
        lines: list[str] = []
        for raw in block.splitlines():
            line = raw.strip()
            if lines and not line.startswith(("- ", "* ")):
                lines[-1] += " " + line
            else:
                lines.append(line)
        out.append("\n".join(lines))
    return tuple(p for p in out if p)


_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def code_spans(paragraph: str) -> tuple[tuple[str, bool], ...]:
    """Split a paragraph into (text, is_code) runs at `backtick` spans, for <code> rendering."""
    parts = _CODE_SPAN.split(paragraph)  # odd indices are the insides of the spans
    return tuple((part, i % 2 == 1) for i, part in enumerate(parts) if part)


def check_view(c: CheckResult, shown_as_failure: bool = True) -> CheckView:
    """One check's view; evidence starts open when the check did not pass. `shown_as_failure`:
    its gate's checks that go against the run are shown under Failures (see `failures`)."""
    return CheckView(
        id=c.id,
        status=c.status.value,
        blocking="blocking" if c.blocking else "advisory",
        reason=c.reason,
        family=c.family or "",
        duration=fmt_seconds(c.duration_s) if c.duration_s else "",
        metrics=tuple(_flatten(c.metrics)),
        evidence=tuple(_drawn_once(e, badge_status(c)) for e in c.evidence),
        open=c.status not in _PASSED and c.status != Status.SKIP,
        judgement=c.judgement.value,
        is_failure=shown_as_failure and is_failure(c),
        badge=badge_status(c),
        limit=c.detection_limit.text() if c.detection_limit is not None else "",
    )


def _drawn_once(e: Evidence, status: str) -> EvidenceView:
    """A check's evidence as its card shows it: a key chart other than an interval (key_charts.py
    draws those of a gate together as one forest plot) is drawn under Key charts at the top of the
    same page, so the card names it instead of drawing it again."""
    if e.is_key and not isinstance(e, Intervals):
        return EvidenceView("elsewhere", e.title, note="drawn under Key charts at the top of this page")
    return evidence_view(e, status)


def is_failure(c: CheckResult) -> bool:
    """The check went against the run: a FAIL, an ERROR, or a blocking SKIP or undecided check."""
    return check_verdict(c) is not Verdict.PROMOTE


def _ran(g: GateResult) -> bool:
    """The gate ran: neither left out nor stopped by an earlier one (which leaves no coverage)."""
    return g.excluded is None and g.coverage is not None


def failure_group(checks: tuple[CheckResult, ...]) -> FailureGroup:
    """One card for `checks`, which share a cause: the first `NUM_EXAMPLES` that carry evidence
    (a diff) are the examples, before any that carry none; the others fold to a line each."""
    first = checks[0]
    examples = sorted(checks, key=lambda c: not c.evidence)[:NUM_EXAMPLES]
    shown = {c.id for c in examples}
    return FailureGroup(
        anchor=f"cause-{first.id}",
        gate=first.gate,
        badge=badge_status(first),
        family=first.family or "",
        cause=signature(first).cause,
        examples=tuple(check_view(c) for c in examples),
        rest=tuple(FoldedCheck(c.id, badge_status(c), "blocking" if c.blocking else "advisory", clip(c.reason, MAX_LINE_CHARS))
                   for c in checks if c.id not in shown),
    )


def failures(gates: tuple[GateResult, ...]) -> tuple[FailureGroup, ...]:
    """The checks of `gates` that went against the run, one card per gate and cause
    (`signature.group_failures`). A gate that did not run (left out, or stopped by an earlier
    one: no coverage) has none: its skips are the earlier failure's consequence, shown in its
    own section."""
    return tuple(failure_group(group) for g in gates if _ran(g)
                 for group in group_failures(c for c in g.checks if is_failure(c)))


def family_chart(checks: tuple[CheckResult, ...]) -> Markup | None:
    """Pass rate by family (only PASS counts as passed — a WARN is a miss the gate could not hold
    against the candidate, not a pass; SKIP is left out)."""
    families: dict[str, list[CheckResult]] = {}
    for c in checks:
        if c.family and c.status != Status.SKIP:
            families.setdefault(c.family, []).append(c)
    if not families:
        return None
    items = []
    for name in sorted(families):
        group = families[name]
        passed = sum(c.status is Status.PASS for c in group)
        items.append((name, passed / len(group), f"({passed}/{len(group)})"))
    return charts.bar_chart_svg(items, "pass rate by family")


def gate_view(g: GateResult, counts: StatusCounts) -> GateView:
    """One gate's section; `counts` are its checks by status. The checks shown under Failures
    are pointed at, a line per card, not shown again."""
    described = tuple(code_spans(p) for p in paragraphs(g.description))
    return GateView(
        id=g.id,
        stage=g.stage,
        title=g.title,
        lead=described[0] if described else (),
        about=described[1:],
        status=g.status.value if _ran(g) else "not run",  # left out, or stopped by an earlier gate: no roll-up
        stopped_run=g.stopped_run,
        duration=fmt_seconds(g.duration_s),
        counts=shown_counts(counts),
        coverage=coverage_text(g.coverage),
        notes=g.notes,
        family_chart=family_chart(g.checks),
        checks=tuple(check_view(c, _ran(g)) for c in g.checks),
        moved=failures((g,)),
    )
