"""Gate 5's statistics without an engine: the e-process is anytime-valid (simulated, looked at
after every pair), alpha is split before any pair is seen, Diffy's rule gates the firing, and the
per-pair measures see what they claim to."""

from __future__ import annotations

import math
import random

import pytest

from gatekeeper.stats.hodges_lehmann import hodges_lehmann
from gatekeeper.traffic.analysis import CRITICAL, Analysis, SliceKey, Thresholds, allocate
from gatekeeper.traffic.answers import Answer
from gatekeeper.traffic.measures import Pair, measure
from gatekeeper.traffic.sequential import PairedEProcess, log_e_value


def _simulate(runs: int, n: int, alpha: float, p_discordant: float, p_candidate: float, seed: int) -> float:
    """The share of runs whose e-process ever crossed 1/alpha, checked after every pair."""
    rng = random.Random(seed)
    crossed = 0
    for _ in range(runs):
        e = PairedEProcess(alpha)
        for _ in range(n):
            if rng.random() < p_discordant:
                cand = rng.random() < p_candidate
                e.update(cand, not cand)
            else:
                e.update(False, False)
            if e.rejected:
                crossed += 1
                break
    return crossed / runs


@pytest.mark.parametrize("p_discordant", [0.02, 0.2])
def test_the_sequential_test_keeps_its_false_alarm_rate_when_looked_at_after_every_pair(p_discordant):
    runs, alpha = 1500, 0.05
    rate = _simulate(runs, 400, alpha, p_discordant, 0.5, seed=7)
    assert rate <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / runs), rate


def test_it_finds_a_candidate_that_fails_more_and_needs_at_least_seven_discordant_pairs():
    assert _simulate(300, 400, 0.05, 0.05, 1.0, seed=1) > 0.99  # a deterministic reference: 20 expected discordances
    assert _simulate(300, 400, 0.05, 0.1, 0.8, seed=1) > 0.8  # a noisy one: 40 discordances, 80% the candidate's
    e = PairedEProcess(0.025)
    for _ in range(10):
        e.update(True, False)
        if e.rejected:
            break
    assert e.crossed_at == 7  # at most a factor 2 per discordant pair (2^5 < 40), and the mixture pays for its breadth
    assert math.isclose(math.exp(log_e_value(0, 0)), 1.0) and e.p_value <= 0.025


def test_alpha_is_split_over_the_tests_before_the_replay_and_sums_to_alpha():
    slices = [(SliceKey("all", ""), frozenset(CRITICAL[:4])), (SliceKey("tenant", "a"), frozenset(CRITICAL[:3])),
              (SliceKey("tenant", "b"), frozenset(CRITICAL[:3]))]
    t = Thresholds(alpha=0.05, primary_share=0.5)
    alphas = allocate(slices, t)
    assert math.isclose(sum(alphas.values()), 0.05)
    assert math.isclose(alphas[(SliceKey("all", ""), "disagreement")], 0.025)
    assert all(a > 0 for a in alphas.values()) and len(alphas) == 4 + 3 + 3


def _pair(i: int, cand: str, ref: str, twin: str) -> Pair:
    return Pair(id=f"r{i}", tenant="t", kind="chat", model_alias="", wants_json=False, tools=None, candidate=Answer(cand, tokens=3),
                reference=Answer(ref, tokens=3), twin=Answer(twin, tokens=3))


def test_diffy_margins_keep_a_crossing_inside_a_noisy_reference_from_firing():
    key = SliceKey("all", "")
    t = Thresholds(alpha=0.5, noise_relative=0.5)
    analysis = Analysis([(key, frozenset({"disagreement"}))], t)
    # 40 pairs where both the candidate and the twin disagree, 4 where only the candidate does:
    # the e-value crosses 1/alpha = 4 (after five candidate-only pairs it would be ~18), but the
    # relative excess 4/84 is far below the 0.5 margin.
    for i in range(40):
        analysis.add(_pair(i, "x", "a", "y"), measure(_pair(i, "x", "a", "y")))
    for i in range(40, 46):
        analysis.add(_pair(i, "x", "a", "a"), measure(_pair(i, "x", "a", "a")))
    state = analysis.slices[key].measures["disagreement"]
    assert state.eproc is not None and state.eproc.rejected and not analysis.fired
    strict = Analysis([(key, frozenset({"disagreement"}))], Thresholds(alpha=0.5, noise_relative=0.05))
    for i in range(46):
        p = _pair(i, "x", "a", "y" if i < 40 else "a")
        strict.add(p, measure(p))
    assert strict.fired


def test_the_measures_compare_the_candidate_and_the_twin_with_the_same_reference():
    tools = ({"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}}},)
    ok = Answer("", calls=(("f", '{"x": 1}'),), finish_reason="tool_calls", tokens=5)
    bad_schema = Answer("", calls=(("f", '{"x": "one"}'),), finish_reason="tool_calls", tokens=5)
    m = measure(Pair(id="r", tenant="t", kind="tool", model_alias="", wants_json=False, tools=tools, candidate=bad_schema, reference=ok,
                     twin=ok))
    assert m.bad["tool_parse"] == (True, False) and m.bad["disagreement"] == (True, False)
    js = measure(Pair(id="r", tenant="t", kind="json", model_alias="", wants_json=True, tools=None, candidate=Answer('{"a": 1,'),
                      reference=Answer('{"a": 1}'), twin=Answer('{ "a" : 1 }')))
    assert js.bad["json_parse"] == (True, False) and js.bad["disagreement"] == (True, False)  # formatting is not a difference
    loop = measure(Pair(id="r", tenant="t", kind="chat", model_alias="", wants_json=False, tools=None, candidate=Answer("!" * 40),
                        reference=Answer("OK"), twin=Answer("OK")))
    assert loop.bad["degeneration"] == (True, False)
    failed = measure(Pair(id="r", tenant="t", kind="chat", model_alias="", wants_json=False, tools=None, candidate=Answer("OK"),
                          reference=Answer(error="http: 500"), twin=Answer("OK")))
    assert not failed.judged and failed.why_not == "reference request failed"
    err = measure(Pair(id="r", tenant="t", kind="chat", model_alias="", wants_json=False, tools=None,
                       candidate=Answer(error="timeout: slow"), reference=Answer("OK"), twin=Answer("OK")))
    assert err.bad["error"] == (True, False)


def test_hodges_lehmann_is_the_median_of_walsh_averages():
    assert hodges_lehmann([1.0, 2.0, 3.0]) == 2.0
    assert hodges_lehmann([0.0, 0.0, 10.0]) == pytest.approx(2.5)  # walsh: 0,0,5,0,5,10 → median 2.5
