"""The primary figure is the one the policy names (decode by default), and the warm-up's quiet
check says when the sides must settle."""

from __future__ import annotations

import pytest

from gatekeeper.config.settings import SettingError
from gatekeeper.perf.measure import WarmUp
from gatekeeper.gates.performance.primary_figure import DECODE, REQUEST, named
from gatekeeper.gates.performance.settings import PerformanceSettings


def test_decode_by_default_and_request_where_the_policy_names_it() -> None:
    assert named(PerformanceSettings().primary_figure) is DECODE
    assert named(PerformanceSettings(primary_figure="request").primary_figure) is REQUEST


def test_an_unknown_figure_is_refused_with_its_key() -> None:
    with pytest.raises(SettingError, match="must be one of decode, request") as refused:
        PerformanceSettings(primary_figure="auto")
    assert refused.value.key == "primary_figure"


def test_a_side_busy_after_answering_makes_the_sides_settle() -> None:
    assert not WarmUp({"baseline": 0.002, "candidate": None}).settle
    warm = WarmUp({"baseline": 0.002, "candidate": 0.98})
    assert warm.settle
    assert "the candidate kept 0.98 cores busy" in warm.why() and "baseline" not in warm.why()


def test_the_latency_guardrail_follows_the_primary_figure() -> None:
    """A policy naming the request figure judges request time per token at its budget, not TPOT:
    the split after the first chunk is what such a server scatters."""
    assert "tpot_p50_s" in [b.metric for b in PerformanceSettings().budgets()]
    request = PerformanceSettings(primary_figure="request")
    metrics = [b.metric for b in request.budgets()]
    assert "e2e_s_per_token" in metrics and "tpot_p50_s" not in metrics
    assert next(b for b in request.budgets() if b.metric == "e2e_s_per_token").limit == request.tpot_budget
    assert sorted(request.figures(1)) == sorted(set(request.figures(1)))  # the primary's figure measured once
