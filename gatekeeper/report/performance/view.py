"""The view of performance.html, from the parts of the run's report data the page shows.

In reading order: the header (header.py) with the performance gate's own reasons (reasons.py); the
gate's table (gate_table.py) of the figures judged against a budget; its key charts (the
ratios with their intervals, the capacity curves with the SLO); the rest of the table folded
(startup, capacity, cost, the figures only reported); its failures; the gate's checks. Then what
the correctness gates observed: per-target figures (transposed, with candidate/reference ratios —
a different baseline from the gate's, and said so), per-gate rows, and latency histograms on one
shared axis.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from gatekeeper.report import charts
from gatekeeper.report.gate_view import failures, gate_view
from gatekeeper.report.header import RunView
from gatekeeper.report.key_charts import key_charts
from gatekeeper.report.performance.gate_table import PERFORMANCE_GATE, baseline_of, seed_table
from gatekeeper.report.performance.reasons import performance_reasons
from gatekeeper.report.performance.summary import PerformanceSummary, TargetPerformance
from gatekeeper.report.statuses import StatusCounts
from gatekeeper.results import GateResult, RunResult


@dataclass(frozen=True)
class PerfRow:
    """One row of a performance table: label cells, then figures, then the meaningful flag."""

    cells: tuple[str, ...]
    meaningful: bool
    reason: str


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value * 1000:.1f} ms"


def _tps(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def _figures(p: TargetPerformance) -> list[tuple[str, str]]:
    """(figure name, formatted value) for one target, in display order."""
    return [
        ("requests (streamed)", f"{p.num_requests} ({p.num_streamed})"),
        ("startup time", "–" if p.startup_s is None else f"{p.startup_s:.2f} s"),
        ("TTFT p50", _ms(p.ttft_s.p50)),
        ("TTFT p95", _ms(p.ttft_s.p95)),
        ("time per output token p50", _ms(p.tpot_s.p50)),
        ("time per output token p95", _ms(p.tpot_s.p95)),
        ("end-to-end latency p50", _ms(p.e2e_s.p50)),
        ("end-to-end latency p95", _ms(p.e2e_s.p95)),
        ("output tokens", str(p.output_tokens)),
        ("output tokens/s", _tps(p.output_tokens_per_s)),
    ]


_RATIO_KEYS = {
    "startup time": "startup_s",
    "TTFT p50": "ttft_p50",
    "time per output token p50": "tpot_p50",
    "end-to-end latency p50": "e2e_p50",
    "output tokens/s": "output_tokens_per_s",
}


def _gate_row(p: TargetPerformance) -> PerfRow:
    cells = (p.scope, p.role, str(p.num_requests), _ms(p.ttft_s.p50), _ms(p.e2e_s.p50), _tps(p.output_tokens_per_s))
    return PerfRow(cells, p.meaningful, p.not_meaningful_reason or "")


def performance_view(header: RunView, run: RunResult, gates: Sequence[tuple[GateResult, StatusCounts]],
                     perf: PerformanceSummary) -> dict[str, Any]:
    """Everything performance.html.j2 needs: `header` on top, then `run`'s performance gate (from
    `gates`: each gate of the run with its checks counted by status) and the performance summary.

    The per-target table is transposed (one row per figure, one column per target, then the
    candidate/reference ratio) so it fits a narrow window; the per-gate table has one row per
    gate and target.
    """
    candidate = next((p for p in perf.targets if p.role == "candidate"), None)
    caveat = "" if candidate is None or candidate.meaningful else str(candidate.not_meaningful_reason)
    has_ratio = bool(perf.candidate_vs_reference)
    columns = tuple(p.role for p in perf.targets) + (("candidate / reference",) if has_ratio else ())
    per_target = [_figures(p) for p in perf.targets]
    figure_rows = []
    for i, (name, _) in enumerate(per_target[0] if per_target else []):
        cells = [name] + [figs[i][1] for figs in per_target]
        if has_ratio:
            ratio = perf.candidate_vs_reference.get(_RATIO_KEYS.get(name, ""))
            cells.append("" if ratio is None else f"{ratio:.2f}×")
        figure_rows.append(tuple(cells))
    meaningful = tuple(("yes" if p.meaningful else f"no: {p.not_meaningful_reason}") for p in perf.targets)
    meaningful += ("",) if has_ratio else ()
    histograms: list[Markup] = []
    every = [t.e2e_s * 1000 for t in run.timings]
    shared = (min(every), max(every)) if every else None  # one x axis for every target's histogram
    for p in perf.targets:
        values = [t.e2e_s * 1000 for t in run.timings if t.target == p.role]
        if values:
            histograms.append(charts.histogram_svg(values, f"{p.role}: end-to-end latency (ms)", x_range=shared))
    gate = next(((g, counts) for g, counts in gates if g.id == PERFORMANCE_GATE), None)
    ran = gate is not None and gate[0].excluded is None and gate[0].coverage is not None  # not stopped before it
    table = seed_table(gate[0], run) if gate else ()
    return {
        "gate": gate_view(*gate) if ran and gate else None,
        "gate_table": tuple(r for r in table if r.budgeted),
        "reported_rows": tuple(r for r in table if not r.budgeted),
        "baseline": baseline_of(gate[0]) if gate else "",
        "key_charts": key_charts((gate[0],)) if ran and gate else (),
        "failures": failures((gate[0],)) if ran and gate else (),
        "perf_reasons": performance_reasons(run),
        "run": header,
        "caveat": caveat,
        "columns": columns,
        "figure_rows": tuple(figure_rows),
        "meaningful": meaningful,
        "gate_columns": ("gate", "target", "requests", "TTFT p50", "E2E p50", "output tok/s"),
        "by_gate": tuple(_gate_row(p) for p in perf.by_gate),
        "histograms": tuple(histograms),
    }
