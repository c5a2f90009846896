"""The performance gate in performance.html: the performance table
(docs/bug-classes.md#performance-table) from the gate's checks.

Rows by dimension — Startup, Latency, Throughput, Compute, Capacity, Cost — with the baseline's and the
candidate's figure (with its unit), the candidate/baseline ratio with its interval, and the check's
status ("reported" for a figure shown but not judged). Everything is read from the checks' findings
(gates/performance/checks.py); nothing is measured or judged here. `baseline_of(gate)` names the baseline the ratios are against.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gatekeeper.gates.performance.checks import (CAPACITY, MEASUREMENT, CapacityFinding, ComparisonFinding, MeasurementFinding,
                                                 PrimaryFinding, figure_of)
from gatekeeper.gates.performance.checks import GATE as PERFORMANCE_GATE
from gatekeeper.results import GateResult, RunResult

_REPORTED = (("e2e_p50_s", "Latency", "E2E p50"), ("e2e_p95_s", "Latency", "E2E p95"), ("itl_p99_s", "Latency", "ITL p99"),
             ("itl_median_s", "Latency", "median ITL per request (geometric mean)"),
             ("tpot_incl_first_p50_s", "Latency", "TPOT p50, first token included (guidellm's)"),
             ("requests_per_s", "Throughput", "requests/s"))
_LATENCY = re.compile(r"_p\d+_s$")  # a latency percentile in seconds (not "…_per_s")
_LABELS = {"output_tokens_per_s": ("Throughput", "output tokens/s"), "tpot_p50_s": ("Latency", "TPOT p50"),
           "cpu_s_per_token": ("Compute", "server CPU time per output token"), "ttft_p95_s": ("Latency", "TTFT p95"),
           "decode_s_per_token": ("Latency", "decode time per output token (the primary figure, in launch rounds)"),
           "e2e_s_per_token": ("Latency", "request time per output token")}
_UNITS = {"cpu_s_per_token": "s", "decode_s_per_token": "s", "e2e_s_per_token": "s", "output_tokens_per_s": "tok/s",
          "requests_per_s": "req/s"}


@dataclass(frozen=True)
class PerfGateRow:
    """One row of the table."""

    dimension: str
    metric: str
    baseline: str
    candidate: str
    ratio: str
    status: str
    budgeted: bool = False  # a figure judged against its budget (a `performance.c<N>.<metric>` check)


def performance_gate(run: RunResult) -> GateResult | None:
    """The run's performance gate, if it ran."""
    return next((g for g in run.gates if g.id == PERFORMANCE_GATE), None)


def _num(value: object, unit: str) -> str:
    """A figure with its unit: seconds as milliseconds, others to four significant digits."""
    if not isinstance(value, (int, float)):
        return "–"
    if unit == "s":
        return f"{value * 1000:.2f} ms"
    return f"{value:.4g}" + (f" {unit}" if unit else "")


def _measurement(gate: GateResult) -> MeasurementFinding | None:
    measured = next((c for c in gate.checks if c.id == MEASUREMENT), None)
    return MeasurementFinding.of(measured) if measured is not None else None


def baseline_of(gate: GateResult) -> str:
    """What the gate's ratios are against, as its measurement check names it ("" when unknown)."""
    measured = _measurement(gate)
    return str(measured.baseline or "") if measured is not None else ""


def _ratio(f: ComparisonFinding | PrimaryFinding) -> str:
    if not isinstance(f.ratio, (int, float)):
        return "–"
    return f"{f.ratio:.3f}" + (f" [{f.ci[0]:.3f}, {f.ci[1]:.3f}]" if isinstance(f.ci, tuple) and len(f.ci) == 2 else "")


def seed_table(gate: GateResult, run: RunResult) -> tuple[PerfGateRow, ...]:
    """The performance table (docs/bug-classes.md#performance-table) for this run."""
    startup = {t.role: t.startup_s for t in run.targets}
    rows = [PerfGateRow("Startup", "ready time (reference / candidate)", _secs(startup.get("reference")),
                        _secs(startup.get("candidate")), "", "reported")]
    for c in gate.checks:
        found = figure_of(c)
        if found is not None and found.metric in _LABELS:
            metric = found.metric
            dim, label = _LABELS[metric]
            unit = "s" if _LATENCY.search(metric) else _UNITS.get(metric, "")
            rows.append(PerfGateRow(dim, f"{label} at concurrency {found.level}", _num(found.baseline, unit),
                                    _num(found.candidate, unit), _ratio(found), "UNDECIDED" if c.undecided else c.status.value,
                                    budgeted=True))
    measured = _measurement(gate)
    for level, sides in (measured.figures or {}).items() if measured is not None else ():
        base, cand = sides.get("baseline", {}), sides.get("candidate", {})
        for key, dim, label in _REPORTED:
            b, k = base.get(key), cand.get(key)
            unit = "s" if _LATENCY.search(key) else _UNITS.get(key, "")
            ratio = f"{k / b:.3f}" if isinstance(b, (int, float)) and isinstance(k, (int, float)) and b else "–"
            rows.append(PerfGateRow(dim, f"{label} at concurrency {level.removeprefix('c')}", _num(b, unit), _num(k, unit),
                                    ratio, "reported"))
    cap = next((c for c in gate.checks if c.id == CAPACITY), None)
    if cap is not None and cap.metrics:
        found_cap = CapacityFinding.of(cap)
        knee, cost = found_cap.knee, found_cap.cost_per_1000
        slo = found_cap.slo
        limits = ", ".join(f"{name} ≤ {limit * 1000:g} ms" for limit, name in (
            (slo.ttft_p95_s, "TTFT p95"), (slo.tpot_p95_s, "TPOT p95")) if limit) if slo is not None else ""
        rows.append(PerfGateRow("Capacity", "knee: highest concurrency with every level up to it within the SLOs"
                                + (f" ({limits})" if limits else ""), f"concurrency {knee.get('baseline', '–')}",
                                f"concurrency {knee.get('candidate', '–')}", "", cap.status.value))
        rows.append(PerfGateRow("Cost", f"per 1,000 requests at the knee (price {found_cap.price_per_accelerator_hour} per "
                                        f"accelerator-hour × {found_cap.accelerators}, in the policy's unit)",
                                _num(cost.get("baseline"), ""), _num(cost.get("candidate"), ""), "", cap.status.value))
    return tuple(rows)


def _secs(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f} s"
