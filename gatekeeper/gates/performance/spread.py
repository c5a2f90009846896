"""Which τ the performance gate puts in its standard errors: calibrated on this machine, or assumed.

τ per figure and level comes from the A/A launch pairs `gatekeeper perf calibrate` stored in the
performance history (`perf/calibration.py`) on this machine class under this load class (quiet or
busy, measured as the gate starts); a figure without `MIN_PAIRS` of them gets the policy's
`launch_spread`. The run's notes say which, figure by figure, with the calibration's age and load.
"""

from __future__ import annotations

from pathlib import Path

from gatekeeper.errors import GatekeeperError
from gatekeeper.gates.performance.settings import PerformanceSettings
from gatekeeper.perf.calibration import MIN_PAIRS, age, load_class, machine_class, spread_of, spreads
from gatekeeper.perf.history import load_history


def calibrated_spreads(path: Path, s: PerformanceSettings, load: float | None = None) -> tuple[dict[str, float], str]:
    """({"c<N>.<metric>": τ as a fraction} for the judged figures calibrated on this machine under
    its present `load` (the share of its cores other processes keep busy: `machine_load`), the
    note saying what was calibrated — how long ago, under which load — and what assumed)."""
    assumed = f"launch-to-launch spread τ = {s.launch_spread:.1%} assumed (the policy's launch_spread)"
    now = load_class(load)
    try:
        entries = load_history(path, kind="calibration")
    except (OSError, GatekeeperError) as e:
        return {}, f"{assumed}: the history {path} could not be read for a calibration ({e})"
    found = spreads(entries, machine_class(), now)
    judged = [f"c{level}.{m}" for level in s.measured_levels() for m in s.figures(level)]
    taus = {f: spread_of(found[f].bound or 0.0) for f in judged if f in found and found[f].calibrated}
    shown_load = "" if load is None else f" ({load:.0%} of its cores busy before the gate launched)"
    if not taus:
        then = "busy" if now == "quiet" else "quiet"
        other = spreads(entries, machine_class(), then)
        elsewhere = max((other[f].pairs for f in judged if f in other), default=0)
        most = max((found[f].pairs for f in judged if f in found), default=0)
        return {}, (f"{assumed}: {path} has {most} of the {MIN_PAIRS} A/A launch pairs a calibration needs from this "
                    f"machine while {now}{shown_load} (`gatekeeper perf calibrate` under this load)"
                    + (f"; its {elsewhere} pairs measured while {then} do not count: "
                       "the spread between launches depends on the load" if elsewhere else ""))
    pairs = min(found[f].pairs for f in taus)
    newest = max(found[f].newest for f in taus)
    shown = ", ".join(f"{f} {t:.2%}" for f, t in taus.items())
    rest = [f for f in judged if f not in taus]
    return taus, (f"τ calibrated on this machine while {now}{shown_load} from ≥{pairs} A/A launch pairs in {path}, the "
                  f"newest {age(newest) or 'of unknown age'} old (90% upper bounds): {shown}"
                  + (f"; {assumed} for {', '.join(rest)}" if rest else ""))
