"""The one percentile definition every report and gate uses: linear interpolation between order
statistics (numpy's default `linear` method, Hyndman & Fan's type 7), pure Python so that a
report needs no numpy."""

from __future__ import annotations

from collections.abc import Sequence


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0..100) of `values`; None for none."""
    if not len(values):
        return None
    ordered = sorted(values)
    pos = q / 100.0 * (len(ordered) - 1)
    lo = int(pos)
    a, b = float(ordered[lo]), float(ordered[min(lo + 1, len(ordered) - 1)])
    t = pos - lo
    return b - (b - a) * (1 - t) if t >= 0.5 else a + (b - a) * t  # numpy's lerp, so the figures agree to the bit
