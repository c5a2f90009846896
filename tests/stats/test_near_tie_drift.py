"""The near-tie drift limit is gate 2's per-token tolerance per dtype (its `max_abs_delta`): a
divergence is the one token where two answers are closest to parting, and measured bf16
divergences moved up to 1.17 nats (gate 2's p99 of 0.8 false-ROLLBACKed a clean bf16 build). A
kernel that shifts every close call is caught by the rate of near ties instead (gate 5)."""

from __future__ import annotations

from gatekeeper.endpoints.responses import ChatResponse, TokenLogprob
from gatekeeper.gates.numerics.settings import NumericsSettings
from gatekeeper.stats.near_tie import DEFAULT_DRIFTS, first_divergence


def test_the_default_drift_per_dtype_is_gate_2s_per_token_tolerance():
    tolerances = NumericsSettings().tolerances
    for dtype, drift in DEFAULT_DRIFTS.items():
        assert drift == tolerances[dtype]["max_abs_delta"], dtype


def _answer(token: str, lp: float, other: str, other_lp: float) -> ChatResponse:
    return ChatResponse(text=token, tool_calls=(), finish_reason="stop", logprobs=(TokenLogprob(token, lp, {token: lp, other: other_lp}),))


def test_a_move_within_bf16s_drift_is_a_near_tie_and_one_beyond_it_is_not():
    # the reference prefers A by 1.2 nats; the candidate's A fell and its B rose by `move` nats each
    def divergence(move: float):
        ref = _answer("A", -0.2, "B", -1.4)
        cand = _answer("B", -1.4 + move, "A", -0.2 - move)
        return first_divergence(ref, cand, 1.0, DEFAULT_DRIFTS["bfloat16"])
    within, beyond = divergence(1.3), divergence(1.7)
    assert within is not None and beyond is not None
    assert abs(within.drift - 1.3) < 1e-9 and within.tie
    assert abs(beyond.drift - 1.7) < 1e-9 and not beyond.tie
