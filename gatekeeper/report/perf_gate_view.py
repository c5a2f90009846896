"""The performance gate in performance.html: the performance table
(docs/bug-classes.md#performance-table) from the gate's checks.

Rows by dimension — Startup, Latency, Throughput, Compute, Capacity, Cost — with the baseline's and the
candidate's figure (with its unit), the candidate/baseline ratio with its interval, and the check's
status ("reported" for a figure shown but not judged). Everything is read from the checks' metrics;
nothing is measured or judged here. `baseline_of(gate)` names the baseline the ratios are against.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gatekeeper.gates.performance.checks import CAPACITY, MEASUREMENT
from gatekeeper.gates.performance.checks import GATE as PERFORMANCE_GATE
from gatekeeper.results import CheckResult, GateResult, RunResult
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


def baseline_of(gate: GateResult) -> str:
    """What the gate's ratios are against, as its measurement check names it ("" when unknown)."""
    measured = next((c for c in gate.checks if c.id == MEASUREMENT), None)
    return str(measured.metrics.get("baseline") or "") if measured is not None else ""


def _ratio(c: CheckResult) -> str:
    m = c.metrics
    ratio, ci = m.get("ratio"), m.get("ci")
    if not isinstance(ratio, (int, float)):
        return "–"
    return f"{ratio:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if isinstance(ci, (list, tuple)) and len(ci) == 2 else "")


def seed_table(gate: GateResult, run: RunResult) -> tuple[PerfGateRow, ...]:
    """The performance table (docs/bug-classes.md#performance-table) for this run."""
    startup = {t.role: t.startup_s for t in run.targets}
    rows = [PerfGateRow("Startup", "ready time (reference / candidate)", _secs(startup.get("reference")),
                        _secs(startup.get("candidate")), "", "reported")]
    for c in gate.checks:
        metric = c.metrics.get("metric")
        if metric in _LABELS:
            dim, label = _LABELS[metric]
            unit = "s" if _LATENCY.search(str(metric)) else _UNITS.get(str(metric), "")
            rows.append(PerfGateRow(dim, f"{label} at concurrency {c.metrics.get('level')}", _num(c.metrics.get("baseline"), unit),
                                    _num(c.metrics.get("candidate"), unit), _ratio(c), "UNDECIDED" if c.undecided else c.status.value,
                                    budgeted=True))
    measured = next((c for c in gate.checks if c.id == MEASUREMENT), None)
    for level, sides in (measured.metrics.get("figures") or {}).items() if measured is not None else ():
        base, cand = sides.get("baseline", {}), sides.get("candidate", {})
        for key, dim, label in _REPORTED:
            b, c = base.get(key), cand.get(key)
            unit = "s" if _LATENCY.search(key) else _UNITS.get(key, "")
            ratio = f"{c / b:.3f}" if isinstance(b, (int, float)) and isinstance(c, (int, float)) and b else "–"
            rows.append(PerfGateRow(dim, f"{label} at concurrency {level.removeprefix('c')}", _num(b, unit), _num(c, unit),
                                    ratio, "reported"))
    cap = next((c for c in gate.checks if c.id == CAPACITY), None)
    if cap is not None and cap.metrics:
        knee, cost = cap.metrics.get("knee", {}), cap.metrics.get("cost_per_1000", {})
        slo = cap.metrics.get("slo") or {}
        limits = ", ".join(f"{name} ≤ {slo[key] * 1000:g} ms" for key, name in (("ttft_p95_s", "TTFT p95"),
                                                                                ("tpot_p95_s", "TPOT p95")) if slo.get(key))
        rows.append(PerfGateRow("Capacity", "knee: highest concurrency with every level up to it within the SLOs"
                                + (f" ({limits})" if limits else ""), f"concurrency {knee.get('baseline', '–')}",
                                f"concurrency {knee.get('candidate', '–')}", "", cap.status.value))
        price = cap.metrics.get("price_per_accelerator_hour")
        rows.append(PerfGateRow("Cost", f"per 1,000 requests at the knee (price {price} per accelerator-hour × "
                                        f"{cap.metrics.get('accelerators', 1)}, in the policy's unit)",
                                _num(cost.get("baseline"), ""), _num(cost.get("candidate"), ""), "", cap.status.value))
    return tuple(rows)


def _secs(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f} s"
