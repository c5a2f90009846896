"""Statuses as every page words them: a check's badge, a gate's coverage, checks counted by status.

`StatusCounts` is how the run's report data counts checks (run/data.py builds them once);
`badge_status`, `coverage_text` and `shown_counts` are how the HTML pages, summary.md, junit.xml
and the progress line put a status into words, so no two of them word one differently.
"""

from __future__ import annotations

from collections.abc import Mapping

from gatekeeper.results import CheckResult, Coverage, Status

StatusCounts = Mapping[Status, int]
"""Checks by status: every `Status` in declaration order, zeros included."""


def badge_status(c: CheckResult) -> str:
    """A check's status as the pages show it: "UNDECIDED" for a check the evidence left open
    (a WARN that is not judged), else its status."""
    return "UNDECIDED" if c.undecided else c.status.value


def coverage_text(coverage: Coverage | None) -> str:
    """A gate's coverage in a few words, e.g. "40/54 (74%, min 60%)"; "–" for a gate not run."""
    if coverage is None:
        return "–"
    if coverage.share is None:
        return f"nothing judged (min {coverage.min_share:.0%})"
    return f"{coverage.judged}/{coverage.total} ({coverage.share:.0%}, min {coverage.min_share:.0%})"


def shown_counts(counts: StatusCounts) -> tuple[tuple[str, int], ...]:
    """(status, number of checks) for the statuses that occur, in status order."""
    return tuple((s.value, n) for s, n in counts.items() if n)
