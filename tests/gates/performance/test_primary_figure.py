"""The primary figure is fixed on the first warm-up: decode where the stream came a chunk at a
time, request time where it burst, or what the policy names; and the warm-up's quiet check."""

from __future__ import annotations

from gatekeeper.gates.performance.measure import WarmUp
from gatekeeper.gates.performance.primary_figure import BURSTS, DECODE, REQUEST, choose


def test_auto_takes_decode_for_steady_streams() -> None:
    figure, why = choose("auto", WarmUp({}, {"baseline": 0.0, "candidate": BURSTS / 2}))
    assert figure is DECODE
    assert "a chunk at a time" in why


def test_auto_takes_request_time_when_either_side_bursts() -> None:
    figure, why = choose("auto", WarmUp({}, {"baseline": 0.0, "candidate": 0.034}))
    assert figure is REQUEST
    assert "candidate 3.4%" in why


def test_without_a_stream_to_look_at_auto_keeps_decode() -> None:
    figure, why = choose("auto", WarmUp({}, {"baseline": None, "candidate": None}))
    assert figure is DECODE and "no stream to look at" in why


def test_the_policy_names_the_figure() -> None:
    bursty = WarmUp({}, {"baseline": 0.5, "candidate": 0.5})
    assert choose("decode", bursty)[0] is DECODE
    assert choose("request", WarmUp({}, {"baseline": 0.0, "candidate": 0.0}))[0] is REQUEST


def test_a_side_busy_after_answering_makes_the_sides_settle() -> None:
    assert not WarmUp({"baseline": 0.002, "candidate": None}, {}).settle
    warm = WarmUp({"baseline": 0.002, "candidate": 0.98}, {})
    assert warm.settle
    assert "the candidate kept 0.98 cores busy" in warm.why() and "baseline" not in warm.why()
