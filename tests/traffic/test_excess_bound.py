"""Gate 5's upper bound on the candidate's excess over the twin (`traffic/excess_bound.py`): it
covers the true excess in at least 95% of runs when looked at after every pair (simulated, with
candidates at, below and above the twin's rate), it shrinks with clean pairs as stated, and the
pairs it says would decide a bound do."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from gatekeeper.traffic.excess_bound import LEVEL, log_capital, pairs_to_decide, upper_bound


def _missed(runs: int, n: int, p_cand: float, p_twin: float, seed: int, looks: int = 1) -> float:
    """The share of runs in which the bound fell below the true excess at some look (every
    `looks` pairs): the bound's failure rate, anytime."""
    rng = np.random.default_rng(seed)
    truth = p_cand - p_twin
    missed = 0
    for _ in range(runs):
        x = (rng.random(n) < p_cand).astype(int) - (rng.random(n) < p_twin).astype(int)
        ones, minus = np.cumsum(x == 1), np.cumsum(x == -1)
        for i in range(looks - 1, n, looks):
            if upper_bound(int(ones[i]), int(minus[i]), i + 1 - int(ones[i]) - int(minus[i])) < truth:
                missed += 1
                break
    return missed / runs


@pytest.mark.parametrize("p_cand, p_twin", [(0.02, 0.0), (0.05, 0.02), (0.3, 0.3), (0.12, 0.02)])
def test_the_bound_covers_the_true_excess_at_every_look(p_cand, p_twin):
    runs = 400
    rate = _missed(runs, 300, p_cand, p_twin, seed=11, looks=10)
    assert rate <= LEVEL + 3 * math.sqrt(LEVEL * (1 - LEVEL) / runs), rate


def test_clean_pairs_shrink_the_bound_about_as_3_7_over_n():
    for n in (100, 420, 2000):
        assert 3.0 / n < upper_bound(0, 0, n) < 4.2 / n


def test_the_capital_grows_with_the_margin_so_the_bound_is_a_bisection():
    margins = [-0.5, -0.1, 0.0, 0.01, 0.05, 0.2, 0.6]
    capitals = [log_capital(m, 7, 3, 200) for m in margins]
    assert capitals == sorted(capitals)
    bound = upper_bound(7, 3, 200)
    assert log_capital(bound, 7, 3, 200) >= -math.log(LEVEL) > log_capital(bound - 1e-6, 7, 3, 200)


def test_a_candidate_failing_everything_is_not_bounded():
    assert upper_bound(50, 0, 0) == 1.0


def test_the_pairs_said_to_decide_a_bound_do():
    ones, minus, zeros = 6, 5, 409  # a 2.6% discordant noise floor, no excess: not within 2 points at 420
    assert upper_bound(ones, minus, zeros) > 0.02
    n = pairs_to_decide(ones, minus, zeros, 0.02)
    assert n is not None and n > 420
    f = n / 420
    assert upper_bound(round(ones * f), round(minus * f), round(zeros * f)) <= 0.02
    assert upper_bound(round(ones * f * 0.9), round(minus * f * 0.9), round(zeros * f * 0.9)) > 0.02


def test_an_excess_at_the_margin_is_never_said_to_be_decidable():
    assert pairs_to_decide(12, 2, 386, 0.02) is None  # 2.5 points seen: no number of pairs brings the bound under 2


def test_random_counts_keep_the_bound_between_the_estimate_and_one():
    rng = random.Random(3)
    for _ in range(200):
        ones, minus, zeros = rng.randrange(30), rng.randrange(30), rng.randrange(1, 500)
        n = ones + minus + zeros
        assert (ones - minus) / n <= upper_bound(ones, minus, zeros) <= 1.0
