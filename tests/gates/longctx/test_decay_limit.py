"""The session-decay checks' stated limit holds: an effect at the limit one run states is caught
in ≥ 95% of fresh runs, through the gate's own test (`decay.paired_p`, Holm's α/2) — simulated at
the spreads of per-session differences, 12 sessions as the default policy runs."""

from __future__ import annotations

import numpy as np
import pytest

from gatekeeper.gates.longctx.decay import detectable, paired_p

SESSIONS, LIMIT, ALPHA, RUNS = 12, 0.005, 0.01, 200


@pytest.mark.parametrize("spread", [0.02, 0.05])
def test_an_effect_at_the_stated_limit_is_caught_95_percent_of_the_time(spread: float) -> None:
    rng = np.random.default_rng(7)
    caught = 0
    for run in range(RUNS):
        stated = detectable(list(rng.normal(0, spread, SESSIONS)), [0.0] * SESSIONS, LIMIT, ALPHA)
        diffs = rng.normal(stated, spread, SESSIONS)  # a fresh run whose true effect is that limit
        caught += diffs.mean() > LIMIT and 2 * paired_p(list(diffs), [0.0] * SESSIONS, seed=run) < ALPHA
    # 95% of 200 at the boundary: the binomial's 5th percentile is ~185; the bound makes it ~96%
    assert caught >= 185, f"caught {caught} of {RUNS}"


def test_sessions_that_moved_alike_state_the_limit_itself() -> None:
    assert detectable([0.1] * SESSIONS, [0.1] * SESSIONS, LIMIT, ALPHA) == LIMIT


def test_a_wider_spread_states_a_larger_limit() -> None:
    rng = np.random.default_rng(1)
    noise = rng.normal(0, 1, SESSIONS)
    assert detectable(list(0.01 * noise), [0.0] * SESSIONS, LIMIT, ALPHA) < detectable(list(0.05 * noise), [0.0] * SESSIONS,
                                                                                         LIMIT, ALPHA)
