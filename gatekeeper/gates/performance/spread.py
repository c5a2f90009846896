"""Which τ the performance gate puts in its standard errors: calibrated on this machine, or assumed.

τ per figure and level comes from the A/A launch pairs `gatekeeper perf calibrate` stored in the
performance history (`perf/calibration.py`); a figure without `MIN_PAIRS` of them from this
machine class gets the policy's `launch_spread`. The run's notes say which, figure by figure.
"""

from __future__ import annotations

from pathlib import Path

from gatekeeper.errors import GatekeeperError
from gatekeeper.gates.performance.settings import PerformanceSettings
from gatekeeper.perf.calibration import MIN_PAIRS, machine_class, spread_of, spreads
from gatekeeper.perf.history import load_history


def calibrated_spreads(path: Path, s: PerformanceSettings) -> tuple[dict[str, float], str]:
    """({"c<N>.<metric>": τ as a fraction} for the judged figures calibrated on this machine, the
    note saying what was calibrated and what assumed)."""
    assumed = f"launch-to-launch spread τ = {s.launch_spread:.1%} assumed (the policy's launch_spread)"
    try:
        found = spreads(load_history(path, kind="calibration"), machine_class())
    except (OSError, GatekeeperError) as e:
        return {}, f"{assumed}: the history {path} could not be read for a calibration ({e})"
    judged = [f"c{level}.{m}" for level in s.measured_levels() for m in s.figures(level)]
    taus = {f: spread_of(found[f].bound or 0.0) for f in judged if f in found and found[f].calibrated}
    if not taus:
        most = max((found[f].pairs for f in judged if f in found), default=0)
        return {}, (f"{assumed}: {path} has {most} of the {MIN_PAIRS} A/A launch pairs from this machine a calibration "
                    "needs (`gatekeeper perf calibrate`)")
    pairs = min(found[f].pairs for f in taus)
    shown = ", ".join(f"{f} {t:.2%}" for f, t in taus.items())
    rest = [f for f in judged if f not in taus]
    return taus, (f"τ calibrated on this machine from ≥{pairs} A/A launch pairs in {path} (90% upper bounds): {shown}"
                  + (f"; {assumed} for {', '.join(rest)}" if rest else ""))
