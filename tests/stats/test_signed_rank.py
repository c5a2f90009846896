"""The carried signed-rank statistic gives scipy's Wilcoxon test (zero-split) on the same values,
whatever the order the values arrive in and however they are split between looks."""

from __future__ import annotations

import random

import numpy as np
import pytest
from scipy.stats import wilcoxon

from gatekeeper.stats.signed_rank import SignedRanks


def _sample(rng: random.Random, n: int) -> list[float]:
    """Differences with many zeros and tied magnitudes of both signs, as gate 5's deltas have."""
    out = []
    for _ in range(n):
        roll = rng.random()
        out.append(0.0 if roll < 0.4 else round(rng.gauss(-0.05, 0.2), 2) if roll < 0.8 else rng.gauss(0.0, 0.3))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_every_look_equals_scipy_on_the_values_so_far(seed):
    rng = random.Random(seed)
    values = _sample(rng, rng.choice((300, 2000, 9000)))
    ranks, at = SignedRanks(), 0
    while at < len(values):
        step = rng.choice((1, 7, 60, 400))
        for v in values[at:at + step]:
            ranks.add(v)
        at = min(at + step, len(values))
        if at < 10:  # scipy's small-sample methods need a few values (gate 5 asks with 5 non-zero or more)
            continue
        for alternative in ("less", "two-sided", "greater"):
            want = float(wilcoxon(np.array(values[:at]), alternative=alternative, zero_method="zsplit").pvalue)
            got = ranks.pvalue(alternative)
            assert got == pytest.approx(want, rel=1e-12, abs=1e-300), (at, alternative)
        assert ranks.nonzero == sum(v != 0.0 for v in values[:at]) and len(ranks) == at


def test_the_figures_do_not_depend_on_arrival_order_or_on_the_looks():
    values = _sample(random.Random(7), 5000)
    shuffled = values[:]
    random.Random(8).shuffle(shuffled)
    looked, once = SignedRanks(), SignedRanks()
    for i, v in enumerate(values):
        looked.add(v)
        if i % 97 == 0 and i > 10:
            looked.pvalue("less")
    for v in shuffled:
        once.add(v)
    assert looked.pvalue("less") == once.pvalue("less") and looked.pvalue("two-sided") == once.pvalue("two-sided")


def test_a_real_shift_is_found_and_no_shift_is_not():
    rng = np.random.default_rng(3)
    shifted, clean = SignedRanks(), SignedRanks()
    for v in rng.normal(-0.05, 0.2, 4000):
        shifted.add(float(v))
    for v in rng.normal(0.0, 0.2, 4000):
        clean.add(float(v))
    assert shifted.pvalue("less") < 1e-6 and clean.pvalue("less") > 1e-3
