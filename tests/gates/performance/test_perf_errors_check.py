"""`performance.errors_under_load` counts failures on both sides (gates/performance/errors_check.py):
a transient failure rate both servers share does not roll back, one only the candidate has does."""

from __future__ import annotations

import numpy as np

from gatekeeper.gates.performance.errors_check import judge_errors
from gatekeeper.results import Status

ALPHA = 0.01


def test_no_failures_and_no_larger_share_pass():
    assert judge_errors(0, 384, 0, 384, ALPHA).status is Status.PASS
    assert judge_errors(0, 384, 3, 384, ALPHA).status is Status.PASS
    same = judge_errors(4, 384, 5, 384, ALPHA)
    assert same.status is Status.PASS and not same.undecided


def test_no_requests_measured_is_undecided_not_a_pass():
    for counts in ((0, 0, 0, 384), (0, 384, 0, 0)):
        j = judge_errors(*counts, ALPHA)
        assert j.status is Status.WARN and j.undecided, (counts, j)


def test_one_failure_against_none_is_undecided_not_a_rollback():
    j = judge_errors(1, 384, 0, 384, ALPHA)
    assert j.status is Status.WARN and j.undecided and j.p is not None and j.p >= ALPHA, j


def test_a_candidate_failing_far_more_fails():
    j = judge_errors(20, 384, 0, 384, ALPHA)
    assert j.status is Status.FAIL and j.p < ALPHA, j


def test_shared_failure_rates_false_fail_at_most_alpha_and_a_real_rate_is_caught():
    """2,000 simulated runs per shared rate (1%, 2%, 5%; 384 requests per side) and for a candidate
    failing 5% against a baseline failing 0.5%."""
    rng = np.random.default_rng(27)
    n, runs = 384, 2000
    for rate in (0.01, 0.02, 0.05):
        c, b = rng.binomial(n, rate, runs), rng.binomial(n, rate, runs)
        fails = sum(judge_errors(int(x), n, int(y), n, ALPHA).status is Status.FAIL for x, y in zip(c, b))
        assert fails / runs <= ALPHA, (rate, fails)
    c, b = rng.binomial(n, 0.05, runs), rng.binomial(n, 0.005, runs)
    caught = sum(judge_errors(int(x), n, int(y), n, ALPHA).status is Status.FAIL for x, y in zip(c, b))
    assert caught / runs >= 0.9, caught
