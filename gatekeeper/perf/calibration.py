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
type share a calibration; a laptop's does not count for them. Within a class, calibrations are
kept apart by load: each pair stores the share of the machine's cores other processes kept busy
just before it launched (`machine_load`, from /proc/stat over one second), and the gate uses the
pairs of the load class it finds itself in (`load_class`: quiet below a quarter, busy above) — a
quiet calibration understates a busy runner's τ. Each τ carries the age of its newest pair.
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
BUSY = 0.25  # the share of the cores other processes keep busy from which a machine counts as busy


def machine_load(seconds: float = 1.0) -> float | None:
    """The share of all cores busy over `seconds` (user, system, irq, steal: not idle or iowait),
    from /proc/stat; None where it cannot be read. Taken while gatekeeper's own servers are idle,
    it is the load of everything else."""
    import time

    def snapshot() -> tuple[int, int] | None:
        try:
            fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
        except (OSError, ValueError, IndexError):
            return None
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
        return sum(fields[:8]), idle

    first = snapshot()
    time.sleep(seconds)
    second = snapshot()
    if first is None or second is None or second[0] <= first[0]:
        return None
    total, idle = second[0] - first[0], second[1] - first[1]
    return min(1.0, max(0.0, (total - idle) / total))


def load_class(load: float | None) -> str:
    """"quiet" or "busy" (`BUSY`); a calibration without a recorded load counts as quiet (the
    docs ask for one on a quiet machine)."""
    return "busy" if load is not None and load >= BUSY else "quiet"


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
    newest: str = ""  # finished_at of the newest pair (ISO 8601)

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


def spreads(entries: Sequence[HistoryEntry], machine: str, load: str | None = None) -> dict[str, Spread]:
    """Every figure's τ from the calibration lines of `machine` in `entries` (of the load class
    `load` only, when given)."""
    from scipy import stats

    by_figure: dict[str, list[tuple[float, float]]] = {}
    newest: dict[str, str] = {}
    for e in entries:
        if e.kind == "calibration" and e.machine == machine and (load is None or load_class(e.load) == load):
            for figure, rv in e.aa.items():
                by_figure.setdefault(figure, []).append(rv)
                newest[figure] = max(newest.get(figure, ""), e.finished_at)
    out = {}
    for figure, rvs in by_figure.items():
        k = len(rvs)
        sq = math.fsum(r * r for r, _ in rvs)
        v_bar = math.fsum(v for _, v in rvs) / k
        estimate = math.sqrt(max(0.0, sq / k - v_bar) / 2)
        bound = math.sqrt(max(0.0, sq / float(stats.chi2.ppf(1 - UPPER, k)) - v_bar) / 2) if k >= MIN_PAIRS else None
        out[figure] = Spread(figure, k, estimate, bound, newest[figure])
    return out


def age(finished_at: str, now: str | None = None) -> str:
    """How long ago an ISO 8601 time was, e.g. "3.2 h" ("" if it cannot be read)."""
    import datetime as dt

    try:
        then = dt.datetime.fromisoformat(finished_at)
        at = dt.datetime.fromisoformat(now) if now else dt.datetime.now(dt.timezone.utc)
        seconds = (at - then).total_seconds()
    except (ValueError, TypeError):
        return ""
    if seconds < 3600:
        return f"{max(seconds, 0) / 60:.0f} min"
    return f"{seconds / 3600:.1f} h" if seconds < 48 * 3600 else f"{seconds / 86400:.0f} d"


def spread_of(ratio_tau: float) -> float:
    """τ on the log scale as the fraction `launch_spread` is written in (exp(τ) − 1)."""
    return math.expm1(ratio_tau)
