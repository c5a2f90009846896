"""`shadow.near_miss`: the sequential tests that passed but came close to firing.

A PROMOTE at 85% of a ROLLBACK threshold reads as green as one at 1%. After the rules, each
critical measure of each slice that did not fire is a near miss when its e-value passed half its
threshold on a log scale (e ≥ √(1/α): with α = 0.0025 the threshold is 400 and half of it, so to
speak, 20) or when its excess over the twin is beyond the noise but estimated below the materiality
(`MetricResult.near_miss`). They make one advisory WARN naming each, which a PROMOTE's reasons list
after what the verdict rests on (verdict.py); none, no check.

Example: "2 sequential tests passed close to firing: disagreement in tenant=support (e = 31.0,
fires at 400; candidate 4.5% vs twin 0.0%), json_parse in all (beyond the twin's noise, below
materiality)".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gatekeeper.traffic.analysis import MetricResult, SliceResult

MAX_NAMED = 6  # near misses named in the reason; the metrics list every one


@dataclass(frozen=True)
class NearMiss:
    """One (slice, measure) that passed close to firing."""

    slice: str
    metric: MetricResult

    def describe(self) -> str:
        """e.g. "disagreement in tenant=support (e = 31.0, fires at 400; candidate 4.5% vs twin 0.0%)"."""
        m = self.metric
        how = ("beyond the twin's noise, below materiality" if m.label in ("Immaterial", "Below materiality") else
               f"e = {m.e_value:.1f}, fires at {1 / m.alpha:.0f}" if m.e_value is not None and m.alpha else "close")
        rates = (f"; candidate {m.candidate_rate:.1%} vs twin {m.twin_rate:.1%}"
                 if m.candidate_rate is not None and m.twin_rate is not None else "")
        return f"{m.name} in {self.slice} ({how}{rates})"


def near_misses(slices: Sequence[SliceResult]) -> list[NearMiss]:
    """Every (slice, critical measure) that passed close to firing, in slice order."""
    return [NearMiss(sl.key, m) for sl in slices for m in sl.metrics if m.near_miss]


def reason(misses: Sequence[NearMiss]) -> str:
    """The advisory WARN's reason."""
    named = "; ".join(n.describe() for n in misses[:MAX_NAMED])
    more = f"; and {len(misses) - MAX_NAMED} more" if len(misses) > MAX_NAMED else ""
    return f"{len(misses)} sequential test{'s' if len(misses) != 1 else ''} passed close to firing: {named}{more}"
