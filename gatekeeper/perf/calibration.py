"""τ, the spread between two launches of one build, estimated from stored A/A launch pairs.

Each `gatekeeper perf calibrate` pair launches the same build twice (A, A′), measures both with
the performance gate's own interleaved blocks and stores, per figure (`c1.cpu_s_per_token` …),
r = the mean log ratio A′/A over the block pairs and v = its sampling variance s²/n. For one
pair E[r²] = 2τ² + v: what two launches add beyond the blocks' own noise is 2τ².

The gate uses a figure's calibrated τ once at least `MIN_PAIRS` pairs from this machine class
have it, and the upper end of a one-sided 90% interval, not the point estimate: a τ set too low
turns a slower process into a FAIL (statistics review H3), one set too high only leaves more
comparisons undecided. With k pairs, Σr²/χ²₀.₁₀(k) bounds 2τ² + v̄ from above (r ~ N(0, 2τ² + v)),
so τ = sqrt(max(0, Σr²/χ²₀.₁₀(k) − v̄) / 2). Without enough pairs the policy's `launch_spread` is
assumed, and the report says so.

The machine class is the CPU model and core count (`machine_class`): a CI fleet's runners of one
type share a calibration; a laptop's does not count for them.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gatekeeper.perf.history import HistoryEntry

MIN_PAIRS = 10  # per machine class and figure, before a calibrated τ replaces the policy's
UPPER = 0.90  # the one-sided confidence of the τ bound the gate uses


def machine_class() -> str:
    """"<CPU model> x<cores>" from /proc/cpuinfo (the platform's processor name elsewhere)."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    if not model:
        import platform

        model = platform.processor() or platform.machine() or "unknown"
    return f"{' '.join(model.split())} x{os.cpu_count() or 1}"


@dataclass(frozen=True)
class Spread:
    """One figure's τ: calibrated from `pairs` A/A launch pairs (`bound` the value used, the
    point `estimate` beside it), or None values when there were too few."""

    figure: str
    pairs: int
    estimate: float | None
    bound: float | None

    @property
    def calibrated(self) -> bool:
        """Enough pairs for the gate to use it."""
        return self.bound is not None


def aa_figures(baseline: Mapping[str, Sequence[float | None]],
               again: Mapping[str, Sequence[float | None]]) -> dict[str, tuple[float, float]]:
    """Per figure, (mean log ratio again/baseline, its variance s²/n) over the block pairs where
    both have a positive value; figures with fewer than 3 such pairs are left out."""
    out = {}
    for figure, base in baseline.items():
        d = [math.log(b / a) for a, b in zip(base, again.get(figure, ())) if a and b and a > 0 and b > 0]
        if len(d) >= 3:
            mean = math.fsum(d) / len(d)
            var = math.fsum((x - mean) ** 2 for x in d) / (len(d) - 1) / len(d)
            out[figure] = (mean, var)
    return out


def spreads(entries: Sequence[HistoryEntry], machine: str) -> dict[str, Spread]:
    """Every figure's τ from the calibration lines of `machine` in `entries`."""
    from scipy import stats

    by_figure: dict[str, list[tuple[float, float]]] = {}
    for e in entries:
        if e.kind == "calibration" and e.machine == machine:
            for figure, rv in e.aa.items():
                by_figure.setdefault(figure, []).append(rv)
    out = {}
    for figure, rvs in by_figure.items():
        k = len(rvs)
        sq = math.fsum(r * r for r, _ in rvs)
        v_bar = math.fsum(v for _, v in rvs) / k
        estimate = math.sqrt(max(0.0, sq / k - v_bar) / 2)
        bound = math.sqrt(max(0.0, sq / float(stats.chi2.ppf(1 - UPPER, k)) - v_bar) / 2) if k >= MIN_PAIRS else None
        out[figure] = Spread(figure, k, estimate, bound)
    return out


def spread_of(ratio_tau: float) -> float:
    """τ on the log scale as the fraction `launch_spread` is written in (exp(τ) − 1)."""
    return math.expm1(ratio_tau)
