"""The Wilcoxon signed-rank test of a sample that grows, kept up to date by the values added since
it was last asked: the test gate 5 applies to each slice's similarity and length deltas at every
live look.

`scipy.stats.wilcoxon(values, zero_method="zsplit")` ranks the whole sample at every call (O(n log n):
about 20 ms a slice at 10⁶ values, every look). Here the statistic it computes is carried instead:
R⁺ (the ranks of the positive values, plus half the ranks of the zeros) and the tie term
Σ(t³ − t), over the magnitudes' average ranks. When the test is asked, the values added since are
folded in: each is placed among the earlier ones by binary search in sorted arrays of their
magnitudes (positive and negative kept apart, zeros counted), which gives exactly how R⁺ and the
tie term change, and the new magnitudes are then merged into those arrays. A fold costs
O(k log n) for k new values, plus one copy of the sorted arrays (a memmove, about 1 ms per 10⁶
values); R⁺ is a sum of quarter-integers, exact in a float, so the figures do not depend on
arrival order or on how the values were split into folds.

The p-value is scipy's: for more than 50 values, scipy's own choice is the asymptotic test
(`method="auto"`), computed here from the carried statistic with scipy's formula — mean n(n+1)/4,
variance (n(n+1)(2n+1) − Σ(t³ − t)/2)/24, no continuity correction, the standard normal's tails
from `scipy.special.ndtr` — and equal to `scipy.stats.wilcoxon` on the same values (tested);
for 50 or fewer, `scipy.stats.wilcoxon` itself (its exact or permutation method).
"""

from __future__ import annotations

import math
from array import array

import numpy as np

ASYMPTOTIC_ABOVE = 50  # scipy's `method="auto"` uses the normal approximation above this many values


class SignedRanks:
    """A growing sample of paired differences and its Wilcoxon signed-rank statistic (zero-split)."""

    def __init__(self) -> None:
        self.values = array("d")  # every value, in arrival order (8 bytes each): the estimate's subsample reads them
        self.nonzero = 0
        self._pos = np.empty(0)  # sorted magnitudes of the folded positive values
        self._neg = np.empty(0)  # and of the negative ones
        self._zeros = 0  # folded zeros
        self._folded = 0
        self._r_plus = 0.0  # R⁺ of the folded values (zero-split)
        self._ties = 0  # Σ (t³ − t) over the folded magnitudes' tie groups (an exact int)

    def __len__(self) -> int:
        return len(self.values)

    def add(self, value: float) -> None:
        """One more difference (O(1): it is folded in when the test is next asked)."""
        self.values.append(value)
        self.nonzero += value != 0.0

    def pvalue(self, alternative: str) -> float:
        """The signed-rank test's p-value over every value added so far; `alternative` as scipy's
        ("less", "greater" or "two-sided"). Needs at least one value."""
        n = len(self.values)
        if n <= ASYMPTOTIC_ABOVE:
            from scipy.stats import wilcoxon

            return float(wilcoxon(np.array(self.values), alternative=alternative, zero_method="zsplit").pvalue)
        from scipy.special import ndtr

        self._fold()
        mean = n * (n + 1.0) * 0.25
        var = n * (n + 1.0) * (2.0 * n + 1.0) - float(self._ties) / 2
        z = (self._r_plus - mean) / math.sqrt(var / 24)
        if alternative == "less":
            return float(ndtr(z))
        if alternative == "greater":
            return float(ndtr(-z))
        return float(2 * ndtr(-abs(z)))

    def _fold(self) -> None:
        """Fold the values added since the last fold into R⁺, the tie term and the sorted arrays."""
        if self._folded == len(self.values):
            return
        from scipy.stats import rankdata

        new = np.array(self.values[self._folded:], dtype=float)
        mags = np.abs(new)
        weight = np.where(new > 0, 1.0, np.where(new == 0, 0.5, 0.0))  # a value's share of its rank in R⁺
        pos_lo, pos_hi = np.searchsorted(self._pos, mags, "left"), np.searchsorted(self._pos, mags, "right")
        neg_lo, neg_hi = np.searchsorted(self._neg, mags, "left"), np.searchsorted(self._neg, mags, "right")
        is_zero = mags == 0
        below = pos_lo + neg_lo + np.where(is_zero, 0, self._zeros)  # earlier magnitudes below each new one
        equal = (pos_hi - pos_lo) + (neg_hi - neg_lo) + np.where(is_zero, self._zeros, 0)
        # R⁺ = Σᵢ wᵢ (½ + Σⱼ h(aⱼ, aᵢ)), h(b, a) = [b < a] + ½[b = a]: the new values' ranks among the earlier
        # ones, the earlier positive values (and zeros) each new one ranks below or ties, the new ones among themselves
        among_old = float(np.dot(weight, below + 0.5 * equal))
        lifts_old = float(np.sum((len(self._pos) - pos_hi) + 0.5 * (pos_hi - pos_lo) + 0.25 * self._zeros * is_zero))
        among_new = float(np.dot(weight, rankdata(mags)))
        self._r_plus += among_old + lifts_old + among_new
        groups, counts = np.unique(mags, return_counts=True)
        before = ((np.searchsorted(self._pos, groups, "right") - np.searchsorted(self._pos, groups, "left"))
                  + (np.searchsorted(self._neg, groups, "right") - np.searchsorted(self._neg, groups, "left"))
                  + np.where(groups == 0, self._zeros, 0))
        for c, k in zip(map(int, before), map(int, counts)):  # Python ints: t³ passes 2⁶³ near 2·10⁶ ties
            self._ties += (c + k) ** 3 - (c + k) - (c ** 3 - c)
        self._pos = _merged(self._pos, mags[new > 0])
        self._neg = _merged(self._neg, mags[new < 0])
        self._zeros += int(is_zero.sum())
        self._folded = len(self.values)


def _merged(sorted_values: np.ndarray, more: np.ndarray) -> np.ndarray:
    """`sorted_values` with `more` merged in, sorted."""
    more = np.sort(more)
    return np.insert(sorted_values, np.searchsorted(sorted_values, more), more)
