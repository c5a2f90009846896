"""stats.compare: which positions the logprob-delta checks count, on hand-made scorings."""

from __future__ import annotations

import math

from gatekeeper.gates.numerics.stats import Scored, compare, in_top_k


def test_in_top_k_counts_rivals_in_both_server_shapes():
    exact = {"a": -0.1, "b": -2.0, "c": -3.0}  # the top-3, the token among them
    assert in_top_k("c", -3.0, exact, 3)
    with_actual = {"a": -0.1, "b": -2.0, "c": -3.0, "z": -15.0}  # vLLM: top-3 plus the actual token
    assert not in_top_k("z", -15.0, with_actual, 3)
    assert in_top_k("z", -15.0, with_actual, 4)
    assert in_top_k("z", -15.0, None, 3)  # no top-k known: the position counts


def test_deltas_far_below_the_top_k_do_not_count_but_nll_sees_them():
    tops = ({"x": -0.2, "y": -1.9}, {"x": -0.3, "y": -1.5}, {"x": -0.1, "y": -2.5})
    a = Scored(("x", "q", "y"), (-0.2, -15.0, -2.5), tops)
    b = Scored(("x", "q", "y"), (-0.25, -9.0, -2.3), tops)
    c = compare(a, b, top_k=2)
    assert c.ranked == (True, False, True)
    assert math.isclose(c.max_delta, 0.2) and math.isclose(c.mean_delta, 0.125)
    assert math.isclose(max(c.deltas), 6.0)  # still recorded
    assert c.nll_rel_drift > 0.3  # the rare token's drift moves the NLL


def test_a_drift_at_a_top_token_counts():
    tops = ({"x": -0.2, "y": -1.9},)
    a = Scored(("x",), (-0.2,), tops)
    b = Scored(("x",), (-3.0,), ({"x": -3.0, "y": -0.1},))
    c = compare(a, b, top_k=2)
    assert math.isclose(c.max_delta, 2.8) and c.top1_agreement == 0.0
