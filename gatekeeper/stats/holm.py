"""Family-wise false-alarm control for a gate's statistical checks: Holm's step-down method.

A gate that decides several checks by tests at level alpha would raise a false alarm on some
check far more often than alpha; Holm keeps the chance of any false alarm in the family at
alpha without assuming the tests are independent (Holm 1979). scipy ships only false-discovery
control (`scipy.stats.false_discovery_control`), which bounds a different error, so the few
lines are here.
"""

from __future__ import annotations

from collections.abc import Sequence


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the input's order: the i-th smallest p times (m − i + 1),
    made monotone, capped at 1. A test is significant at family-wise level alpha when its
    adjusted p is below alpha."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted
