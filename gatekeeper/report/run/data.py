"""The report data: everything the run's renderers read, derived from a `RunResult` once.

`build_report_data(run, report_files)` computes what more than one report shows (the correctness
table, correctness/table.py; the performance summary, performance/summary.py; the checks counted
by status for the run and for each gate; and the names of the report files, so one report can
point to the others, and where such links point) into a frozen `ReportData`. Every renderer takes
that value and only formats it; none of them derives these figures again, so the reports of a
run cannot disagree with each other. The pages' own families (correctness/, performance/) never
import this module: the renderers of pages.py hand them the parts of `ReportData` they show.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from types import MappingProxyType

from gatekeeper.detection import DetectionLimit
from gatekeeper.report.correctness.table import CorrectnessRow, build_table
from gatekeeper.report.performance.summary import PerformanceSummary, summarize_performance
from gatekeeper.report.statuses import StatusCounts
from gatekeeper.report_links import RELATIVE, ReportLinks
from gatekeeper.results import CheckResult, GateResult, RunResult, Status


@dataclass(frozen=True)
class ReportData:
    """One run as the renderers see it.

    `counts` are all the run's checks by status; `gate_counts` has one such entry per gate of
    `run.gates`, in the same order (`gates()` pairs them up). `report_files` names every report file of the run in the order they are listed
    to a person: the HTML pages first.
    """

    run: RunResult
    performance: PerformanceSummary
    counts: StatusCounts
    gate_counts: tuple[StatusCounts, ...]
    report_files: tuple[str, ...]
    correctness: tuple[CorrectnessRow, ...] = ()
    links: ReportLinks = RELATIVE  # where links that leave the report point: beside it, or under --report-url

    def gates(self) -> Iterable[tuple[GateResult, StatusCounts]]:
        """Each gate of the run with its checks counted by status."""
        return zip(self.run.gates, self.gate_counts, strict=True)


def limits_text(run: RunResult, most: int = 3) -> list[str]:
    """What the run's blocking PASSes would have caught: the `most` weakest stated limits (largest
    share of items a fault could hit unseen), then how many blocking PASSes state none."""
    passes = [c for g in run.gates for c in g.checks if c.blocking and c.status is Status.PASS and not c.undecided]
    stated: list[tuple[str, DetectionLimit]] = [(c.id, c.detection_limit) for c in passes if c.detection_limit is not None]
    stated.sort(key=lambda pair: (pair[1].unit != "share", -pair[1].effect))
    lines = [f"{check_id}: {limit.text()}" for check_id, limit in stated[:most]]
    if len(stated) > most:
        lines.append(f"… {len(stated) - most} more stated in summary.json (detection_limit)")
    if len(passes) > len(stated):
        lines.append(f"{len(passes) - len(stated)} of {len(passes)} blocking PASS checks state no detection limit yet")
    return lines


def _count_statuses(checks: Iterable[CheckResult]) -> StatusCounts:
    """`checks` counted by status (a read-only mapping over every `Status`)."""
    statuses = [c.status for c in checks]
    return MappingProxyType({s: statuses.count(s) for s in Status})


def build_report_data(run: RunResult, report_files: tuple[str, ...], links: ReportLinks = RELATIVE) -> ReportData:
    """Derive the report data of `run` (a pure function of its arguments); `report_files` is
    the registry's `listed_filenames()`, passed in because the registry imports the renderers,
    which import this module; `links` says where summary.md's links point (--report-url)."""
    return ReportData(
        run=run,
        performance=summarize_performance(run),
        counts=_count_statuses(c for g in run.gates for c in g.checks),
        gate_counts=tuple(_count_statuses(g.checks) for g in run.gates),
        report_files=report_files,
        correctness=build_table(run),
        links=links,
    )
