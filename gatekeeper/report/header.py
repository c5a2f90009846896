"""The header both HTML pages of a run open with: the verdict, its reasons, who was compared, the
targets, where the answers came from and the run's other files.

`run_view` builds it from the run, its checks counted by status and the files to list; each
reason links to the check it names — on the correctness page, or on the performance page for a
performance check (`other_page`). `provenance` is also summary.md's (a re-judged run, the
reference cache).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gatekeeper.gates.performance.checks import GATE as PERFORMANCE_GATE
from gatekeeper.report.evidence_view import clip, fmt_seconds
from gatekeeper.report.identity import identify
from gatekeeper.report.statuses import StatusCounts, shown_counts
from gatekeeper.results import RunResult

MAX_TOP_REASONS = 3  # the verdict box shows these; the rest fold away under <details>
MAX_REASON_CHARS = 180  # the verdict box keeps each reason to two lines; the check has it whole


@dataclass(frozen=True, kw_only=True)
class TargetView:
    """One row of the targets table."""

    role: str
    kind: str
    description: str
    model: str
    base_url: str
    version: str
    startup: str
    path: str = ""  # the dtype the tolerances assume, and what the user declared


@dataclass(frozen=True)
class RunView:
    """The page header shared by both reports."""

    run_id: str
    started_at: str
    finished_at: str
    verdict: str
    headline: str  # the verdict, with "(partial: …)" for a run that left gates out
    identity: str  # who was compared, in one line (report/identity.py); "" without both targets
    exit_code: int
    reasons: tuple[tuple[str | None, str], ...]  # (link to the check it names, or None; text)
    more_reasons: tuple[tuple[str | None, str], ...]
    policy: str
    golden_sets: str
    seed: int
    targets: tuple[TargetView, ...]
    counts: tuple[tuple[str, int], ...] = field(default=())
    hooks: tuple[tuple[bool, str], ...] = field(default=())  # (ok, "webhook https://… : HTTP 200") per rollback hook
    provenance: tuple[str, ...] = field(default=())  # where the answers came from, when not (all) from the servers now
    files: tuple[tuple[str, str], ...] = field(default=())  # (name, link): the run's other files, the targets' logs


def _linked(reason: str, links: dict[str, str]) -> tuple[str | None, str]:
    """A verdict reason with the link to the check it names, or None."""
    head = re.match(r"[^\s:]*", reason).group(0)  # type: ignore[union-attr]  # matches "" at worst
    return links.get(head), clip(reason, MAX_REASON_CHARS)


def run_files(run: RunResult, report_files: tuple[str, ...], page: str) -> tuple[tuple[str, str], ...]:
    """The run directory's files a reader of `page` looks for next, as (name, link): the other
    reports, the check records, the recorded answers and each launched target's log (the first
    places a failed request's evidence points to). A re-judged run's directory holds no logs: its
    recording's does."""
    names = [n for n in report_files if n != page] + ["records.jsonl", "answers/"]
    if not run.rejudged_from:
        names += [f"{t.role}.log" for t in run.targets if t.kind != "url"]
    return tuple((n, n) for n in names)  # beside the page, in the run directory: relative, also under --report-url


def run_view(run: RunResult, counts: StatusCounts, files: tuple[tuple[str, str], ...], other_page: str = "") -> RunView:
    """The header: verdict, reasons (each linked to its check: on this page, the correctness
    one, or on `other_page` for a performance check), targets, the run's checks by status
    (`counts`) and the run's files (`files`: `run_files` of the page being written)."""
    links = {c.id: (f"{other_page}#check-{c.id}" if g.id == PERFORMANCE_GATE else f"#check-{c.id}")
             for g in run.gates for c in g.checks}
    return RunView(
        run_id=run.run_id,
        started_at=run.started_at,
        finished_at=run.finished_at,
        verdict=run.verdict.value,
        headline=run.headline,
        identity=who.line if (who := identify(run.targets)) is not None else "",
        exit_code=run.exit_code,
        reasons=tuple(_linked(r, links) for r in run.reasons[:MAX_TOP_REASONS]),
        more_reasons=tuple(_linked(r, links) for r in run.reasons[MAX_TOP_REASONS:]),
        policy=run.policy,
        golden_sets=", ".join(run.golden_sets),
        seed=run.seed,
        targets=tuple(
            TargetView(role=t.role, kind=t.kind, description=t.description, model=t.model, base_url=t.base_url,
                       version=t.version or "–", startup=fmt_seconds(t.startup_s), path=_path(t.dtype, t.declared, t.observed))
            for t in run.targets
        ),
        counts=shown_counts(counts),
        hooks=tuple((h.ok, f"{h.kind} {h.target}: {h.detail}") for h in run.hooks),
        provenance=provenance(run),
        files=files,
    )


def provenance(run: RunResult) -> tuple[str, ...]:
    """Where the judged answers came from, when not every one from the servers during this run."""
    lines = []
    if run.rejudged_from:
        carried = [g.id for g in run.gates if g.reused]
        lines.append(f"Re-judged: every answer comes from the recording of run {run.rejudged_from}; no server was asked"
                     + (f"; carried over as measured: {', '.join(carried)}" if carried else "") + ".")
    if run.reference_cache is not None:
        lines.append(run.reference_cache.line[0].upper() + run.reference_cache.line[1:] + ".")
    return tuple(lines)


def _path(dtype: str, declared: tuple[tuple[str, str], ...], observed: tuple[tuple[str, str], ...] = ()) -> str:
    """e.g. "bfloat16 (declared: dtype=bfloat16, tp=4; states: dtype=bfloat16, tp=4)" or
    "float32 (nothing declared; states nothing)"."""
    said = ", ".join(f"{k}={v}" for k, v in declared)
    seen = ", ".join(f"{k}={v}" for k, v in observed)
    return (f"{dtype} (" + (f"declared: {said}" if said else "nothing declared")
            + (f"; states: {seen}" if seen else "; states nothing") + ")")
