"""`performance.history`: this run's figures appended to the history, and the drift across runs.

Each run appends the candidate's judged figures (`c<N>.<metric>`, the mean over its blocks) and
their candidate/baseline ratios (`<figure>.ratio`) to the policy's history file; then the trend of
each is searched for change points (`gatekeeper/perf/history.py`, Apache Otava). A change point that
made a metric worse is how a regression arriving 2–3% a day is named with the run where it began
(docs/bug-classes.md#decode-regression) — one run's comparison with its baseline cannot see it.
Advisory: the history is the project's memory, not this candidate's evidence.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from gatekeeper.errors import GatekeeperError
from gatekeeper.evidence import Series, Table
from gatekeeper.gates.interface import GateContext
from gatekeeper.gates.performance import checks
from gatekeeper.gates.performance.checks import HistoryFinding
from gatekeeper.perf.compare import Comparison
from gatekeeper.perf.history import MIN_RUNS, HistoryEntry, append_entry, load_history, trend
from gatekeeper.results import Judgement, Status

TREND_RUNS = 200


def entry_of(run_id: str, label: str, baseline: str, comparisons: list[Comparison],
             extra: dict[str, float] | None = None) -> HistoryEntry:
    """This run's history line: each judged figure and ratio (missing ones left out), and `extra`
    figures (the primary decode figure and its ratio over the launch rounds)."""
    metrics: dict[str, float] = dict(extra or {})
    for c in comparisons:
        if c.candidate is not None:
            metrics[f"{c.level}.{c.metric}"] = c.candidate
        if c.ratio is not None:
            metrics[f"{c.level}.{c.metric}.ratio"] = c.ratio
    return HistoryEntry(run_id=run_id, finished_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), label=label,
                        baseline=baseline, metrics=metrics)


def history_check(ctx: GateContext, path: Path, entry: HistoryEntry, higher_is_better: dict[str, bool]) -> None:
    """Append `entry`, then look for change points that made a figure worse."""
    try:
        append_entry(path, entry)
        entries = load_history(path)
    except (OSError, GatekeeperError) as e:
        ctx.check(checks.HISTORY, Status.ERROR, f"the performance history {path} could not be written or read: {e}",
                  HistoryFinding(path=str(path)), advisory=True)
        return
    metrics = HistoryFinding(path=str(path), runs=len(entries))
    if len(entries) < MIN_RUNS:
        ctx.check(checks.HISTORY, Status.SKIP, f"appended run {len(entries)} to {path}; change points need at least "
                  f"{MIN_RUNS} runs", metrics, advisory=True)
        return
    worse, rows, curves = [], [], []
    try:
        for name in sorted(entry.metrics):
            t = trend(entries, name, TREND_RUNS)
            base = name.removesuffix(".ratio").split(".", 1)[1]
            up_is_good = higher_is_better.get(base, True)
            for change in t.changes():
                bad = (change.relative_change < 0) == up_is_good
                rows.append((name, change.describe(), "worse" if bad else "better"))
                if bad:
                    worse.append(f"{name} {change.describe()}")
            if not name.endswith(".ratio"):
                curves.append(Series(f"{name} across runs", t.runs, {name: t.values}, "run", name))
    except GatekeeperError as e:  # Otava is an extra: without it the history still grows
        ctx.check(checks.HISTORY, Status.SKIP, f"appended run {len(entries)} to {path}; {e}", metrics, advisory=True)
        return
    evidence = [Table("change points", ("metric", "change", "direction"), rows), *curves[:4]] if rows else curves[:4]
    metrics = HistoryFinding(path=str(path), runs=len(entries), change_points=tuple((r[0], r[1]) for r in rows))
    if worse:
        ctx.check(checks.HISTORY, Status.WARN, f"{len(worse)} figure(s) drifted worse across runs: {worse[0]}", metrics,
                  evidence, advisory=True, judgement=Judgement.STATISTICAL)
    else:
        ctx.check(checks.HISTORY, Status.PASS, f"no figure drifted worse over the last {min(len(entries), TREND_RUNS)} runs "
                  f"of {path}", metrics, evidence, advisory=True, judgement=Judgement.STATISTICAL)
