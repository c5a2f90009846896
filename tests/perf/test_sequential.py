"""The primary figure's sequential test (`gatekeeper/perf/sequential.py`) against the noise this
machine has: its error rates counted over simulated runs of launch rounds.

The noise is measured here: clean bundled pairs, `--gates performance`, gave decode seconds per
output token at concurrency 1 with a per-pair sd of 7–11% in log ratio (the c1 block pairs of 20
runs, 2026-12-04; CPU seconds per token scatter as much: it is the machine), 16 pairs a round
(the default), beside the assumed launch spread τ = 2.5%; a calibrated quiet machine has
τ ≈ 0.8% (statistics review 2026-12 §1.3).
"""

from __future__ import annotations

import math
import random

import pytest

from gatekeeper.perf.sequential import Design, Outcome, Round, evaluate

PAIR_SD, PAIRS = 0.10, 16
RUNS = 600


def _run(rng: random.Random, slower: float, tau_true: float, design: Design):
    """One run: rounds until the test stops; each round one fresh launch per side (each off by
    N(0, τ)), `PAIRS` pairs with log-normal noise."""
    rounds: list[Round] = []
    while True:
        offset = rng.gauss(0, tau_true) - rng.gauss(0, tau_true)
        rounds.append(Round(tuple(math.log1p(slower) + offset + rng.gauss(0, PAIR_SD) for _ in range(PAIRS))))
        state = evaluate(rounds, design)
        if state.outcome is not Outcome.CONTINUE:
            return state


QUIET = 0.008  # τ of a quiet machine (the rounds of a clean run here spread by less: τ measured 0 over 7 rounds)
MACHINES = [pytest.param(QUIET, 0.025, id="quiet-uncalibrated"), pytest.param(QUIET, QUIET, id="quiet-calibrated")]


@pytest.mark.parametrize(("tau", "assumed"), MACHINES)
def test_a_clean_candidate_rarely_fails_and_is_decided(tau: float, assumed: float):
    rng = random.Random(11)
    states = [_run(rng, 0.0, tau, Design(0.05, tau=assumed)) for _ in range(RUNS)]
    fails = sum(s.decided is Outcome.FAIL for s in states)
    passes = sum(s.decided is Outcome.PASS for s in states)
    assert fails / RUNS <= 0.05, fails  # the design's alpha
    assert passes / RUNS >= 0.9, passes  # the rest HOLD (undecided after 12 rounds, or noisy)
    assert all(s.rounds >= 3 for s in states)  # no decision before the third round


@pytest.mark.parametrize(("tau", "assumed"), MACHINES)
def test_a_regression_of_the_materiality_fails_with_its_power(tau: float, assumed: float):
    rng = random.Random(12)
    states = [_run(rng, 0.05, tau, Design(0.05, tau=assumed)) for _ in range(RUNS)]
    assert sum(s.decided is Outcome.FAIL for s in states) / RUNS >= 0.93  # 95% power, less Monte Carlo slack
    assert sum(s.decided is Outcome.PASS for s in states) / RUNS <= 0.05


def test_a_busy_machine_that_knows_it_is_busy_still_errs_at_most_at_alpha():
    """τ 2.5%, calibrated as such: slower decisions (some HOLD after 12 rounds), no more false FAILs."""
    rng = random.Random(15)
    states = [_run(rng, 0.0, 0.025, Design(0.05, tau=0.025)) for _ in range(RUNS)]
    assert sum(s.decided is Outcome.FAIL for s in states) / RUNS <= 0.05
    assert sum(s.decided is Outcome.PASS for s in states) / RUNS >= 0.8


def test_a_calibration_decides_sooner():
    rng = random.Random(13)
    assumed = sorted(_run(rng, 0.0, QUIET, Design(0.05, tau=0.025)).rounds for _ in range(300))
    calibrated = sorted(_run(rng, 0.0, QUIET, Design(0.05, tau=QUIET)).rounds for _ in range(300))
    assert calibrated[150] <= 4 and calibrated[150] < assumed[150]  # the median run


def test_a_machine_noisier_than_its_calibration_is_named_not_failed():
    """A busy runner (τ 2.5%) judged with a quiet calibration (0.8%): without the guard (the rounds'
    own spread in σ) and the noise check, 18.5% false FAILs (statistics review 2026-12); with them
    few FAILs, and the noise check names the machine in many runs."""
    rng = random.Random(14)
    states = [_run(rng, 0.0, 0.025, Design(0.05, tau=QUIET)) for _ in range(RUNS)]
    fails = sum(s.decided is Outcome.FAIL for s in states)
    noisy = [s for s in states if s.noisy]
    assert fails / RUNS <= 0.1, fails
    assert len(noisy) >= RUNS // 10
    assert all(s.noise.tau_measured > QUIET for s in noisy)  # type: ignore[union-attr]


def test_boundaries_rounds_and_the_estimate():
    d = Design(0.05)
    assert d.upper == pytest.approx(math.log(19)) and d.lower == pytest.approx(-math.log(19))
    far = Round(tuple([math.log(1.5)] * 4))
    assert evaluate([far], d).outcome is Outcome.CONTINUE  # the first rounds never decide
    assert evaluate([far] * 3, d).outcome is Outcome.FAIL
    same = Round((0.01, -0.01, 0.0, 0.0))
    state = evaluate([same] * 12, Design(0.05, min_rounds=3, max_rounds=12, tau=0.5))  # τ 50%: nothing decides
    assert state.outcome is Outcome.UNDECIDED and state.rounds == 12
    assert state.ratio == pytest.approx(1.0) and state.ci[0] < 1 < state.ci[1]
    assert len(state.llr_path) == 12 and state.llr_path[-1] == state.llr
