"""A gate 5 rule that did not fire states what it rules out — the anytime upper bound of the
candidate's excess over the twin — and is undecided (HOLD) while that bound is wider than the
policy's materiality; an excess beyond the noise but certainly within the materiality WARNs; and
there is no absolute margin: half a point more errors fires once the evidence is there."""

from __future__ import annotations

import pytest

from gatekeeper.detection import rule
from gatekeeper.results import Status
from gatekeeper.traffic.analysis import CRITICAL, Analysis, SliceKey, Thresholds
from gatekeeper.traffic.answers import Answer
from gatekeeper.traffic.measures import Pair, measure
from gatekeeper.traffic.rules import pair_rule
from gatekeeper.traffic.settings import ShadowSettings

OK = Answer("fine", finish_reason="stop")
FAILED = Answer(error="http: HTTP 503")


def _pair(i: int, cand: Answer, twin: Answer = OK) -> Pair:
    return Pair(id=f"r{i}", tenant="t", kind="chat", model_alias="", wants_json=False, tools=None, candidate=cand, reference=OK, twin=twin)


def _judge(pairs: list[Pair], t: Thresholds | None = None) -> list:
    analysis = Analysis([(SliceKey("all", ""), frozenset(CRITICAL))], t or Thresholds(alpha=0.05))
    for p in pairs:
        analysis.add(p, measure(p))
    return analysis.results()


def test_a_clean_run_states_its_bound_and_passes_within_the_materiality():
    outcome = pair_rule("errors_up", _judge([_pair(i, OK) for i in range(420)]))
    assert outcome.status is Status.PASS and outcome.limit is not None
    assert outcome.limit.unit == "excess" and 0.0 < outcome.limit.effect < 0.01 and outcome.limit.materiality == 0.02
    assert outcome.limit.judged == 420 and outcome.to_decide is None
    assert "rules out more than +0.9 points of failed requests over the reference's twin" in outcome.limit.text()
    assert rule(True, outcome.reason, None, outcome.limit) is None  # stands as a PASS


def test_too_few_pairs_leave_the_rule_undecided_with_what_would_decide_it():
    outcome = pair_rule("errors_up", _judge([_pair(i, OK) for i in range(96)]))
    assert outcome.status is Status.PASS and outcome.limit is not None and not outcome.limit.within_materiality
    assert outcome.to_decide is not None and 96 < outcome.to_decide < 300
    ruling = rule(True, outcome.reason, None, outcome.limit, outcome.decide)
    assert ruling is not None  # what would decide it comes first: a verdict's reasons are cut at 240 characters
    assert ruling.reason.startswith(f"undecided: about {outcome.to_decide} judged pairs would decide it at the rates seen — "
                                    "rules out more than +3.")


def test_half_a_point_more_errors_fires_where_the_absolute_margin_never_let_it():
    # 0.4% shared noise on both sides, the candidate 0.9% more on its own: 5,000 pairs.
    pairs = []
    for i in range(5000):
        twin_fails = i % 250 == 0
        cand_fails = twin_fails or i % 111 == 7
        pairs.append(_pair(i, FAILED if cand_fails else OK, FAILED if twin_fails else OK))
    outcome = pair_rule("errors_up", _judge(pairs, Thresholds(alpha=0.05, materiality={"error": 0.005})))
    assert outcome.status is Status.FAIL, outcome.reason


def test_an_excess_beyond_the_noise_but_within_the_materiality_warns():
    pairs = [_pair(i, FAILED if i % 300 == 0 else OK) for i in range(20000)]  # +0.3 points, materiality 2
    outcome = pair_rule("errors_up", _judge(pairs))
    assert outcome.status is Status.WARN and "within its materiality" in outcome.reason
    assert "excess at most +0." in outcome.reason


def test_a_material_excess_fires_at_the_materiality_not_before():
    pairs = [_pair(i, FAILED if i % 20 == 0 else OK) for i in range(420)]  # +5 points against a 2-point materiality
    assert pair_rule("errors_up", _judge(pairs)).status is Status.FAIL


def test_the_policy_names_materialities_by_critical_measure():
    assert ShadowSettings(materiality={"error": 0.01}).thresholds().margin_of("error") == 0.01
    assert ShadowSettings(materiality={"error": 0.01}).thresholds().margin_of("disagreement") == 0.03
    with pytest.raises(ValueError, match="names no critical measure: errors"):
        ShadowSettings(materiality={"errors": 0.01})


def test_a_request_answered_only_after_a_retry_counts_in_retry_not_in_error():
    retried = Answer("fine", finish_reason="stop", retries=2)
    m = measure(_pair(0, retried))
    assert m.bad["retry"] == (True, False) and m.bad["error"] == (False, False) and m.bad["disagreement"] == (False, False)
    assert measure(_pair(1, FAILED)).bad["retry"] == (True, False)  # a failure was not answered at the first attempt either
    assert measure(_pair(2, OK, retried)).bad["retry"] == (False, True)  # the twin's retries are its noise floor
    assert Answer.from_dict(retried.to_dict()) == retried and "retries" not in OK.to_dict()


def test_retries_the_twin_needs_as_often_leave_retries_up_undecided_not_fired():
    # 2% of requests retried on each side, independently (a shared flaky balancer): 420 pairs cannot
    # rule out 2 points more on the candidate — undecided (HOLD), never a ROLLBACK
    retried = Answer("fine", finish_reason="stop", retries=1)
    pairs = [_pair(i, retried if i % 50 == 3 else OK, retried if i % 50 == 29 else OK) for i in range(420)]
    outcome = pair_rule("retries_up", _judge(pairs))
    assert outcome.status is Status.PASS and outcome.limit is not None and not outcome.limit.within_materiality
    assert outcome.to_decide is not None and outcome.to_decide > 420
