"""The Hodges-Lehmann estimate of a shift: the median of the Walsh averages.

Gate 5's continuous measures (similarity, length) test a shift with the Wilcoxon signed-rank test
and report its size with this estimate, which goes with that test.
"""

from __future__ import annotations

from typing import Any

import numpy as np

HL_SAMPLE = 1000  # over at most this many values (a fixed-seed subsample beyond)


def hodges_lehmann(values: Any) -> float:
    """The median of the Walsh averages (x_i + x_j) / 2, i ≤ j — over a fixed-seed subsample of
    HL_SAMPLE values when there are more (the estimate, not the test, is subsampled)."""
    x = np.asarray(values, dtype=float)
    if len(x) > HL_SAMPLE:
        x = np.random.default_rng(0).choice(x, HL_SAMPLE, replace=False)
    i, j = np.triu_indices(len(x))
    return float(np.median((x[i] + x[j]) / 2.0))
