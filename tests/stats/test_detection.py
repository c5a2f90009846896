"""A check's detection limit is what it would catch with 95% probability — checked against
simulation through the binomial it claims, and against the check framework's rules: nothing
judged is undecided, a limit beyond the materiality is undecided, never a PASS."""

from __future__ import annotations

import numpy as np
import pytest

from gatekeeper.detection import DetectionLimit, Items, exact, fisher_limit, items_limit, tolerance
from gatekeeper.endpoints.client import Endpoint
from gatekeeper.gates.interface import GateContext
from gatekeeper.report.serialise import limit_json, limit_of
from gatekeeper.results import Status


@pytest.mark.parametrize(("judged", "fail_at"), [(30, 1), (96, 1), (200, 5), (12, 3)])
def test_a_fault_at_the_limit_is_caught_95_percent_of_the_time(judged: int, fail_at: int) -> None:
    limit = items_limit(judged, "answers differing", fail_at)
    assert limit is not None and limit.judged == judged
    rng = np.random.default_rng(7)
    caught = rng.binomial(judged, limit.effect, 20_000) >= fail_at
    assert caught.mean() == pytest.approx(0.95, abs=0.006)
    below = rng.binomial(judged, limit.effect * 0.7, 20_000) >= fail_at  # a smaller fault is caught less often
    assert below.mean() < 0.93


def test_thirty_exact_items_catch_a_fault_on_a_tenth_of_them() -> None:
    limit = items_limit(30, "golden answers differing")
    assert limit is not None
    assert limit.effect == pytest.approx(1 - 0.05 ** (1 / 30))  # 9.5%
    assert limit.text() == "would catch ≥ 9.5% of golden answers differing (95% power, 30 judged)"


def test_nothing_judged_has_no_limit() -> None:
    assert items_limit(0, "anything") is None
    assert Items(0, "anything").limit() is None


def test_a_limit_survives_its_json_form() -> None:
    for limit in (DetectionLimit(0.05, "request seconds per output token", "regression", 0.95, 0.05),
                  items_limit(40, "tool cases failing", 2, materiality=0.2), exact("difference from the reference's answer")):
        assert limit is not None
        assert limit_of(limit_json(limit)) == limit
    assert limit_of(None) is None


def _ctx() -> GateContext:
    ep = Endpoint("reference", "http://127.0.0.1:9", "m")  # never asked
    return GateContext(gate_id="golden", reference=ep, candidate=ep, settings=None, blocking_rule=lambda check_id: True, capabilities={},
                       record=lambda r: None)


def test_a_count_check_that_judged_nothing_is_undecided_not_a_pass() -> None:
    ctx = _ctx()
    for status in (Status.PASS, Status.WARN):
        check = ctx.check("cases", status, "0 of 0 differ", judged=Items(0, "answers differing"))
        assert check.undecided and check.status is Status.WARN and check.detection_limit is None
        assert check.reason == "undecided: nothing judged (0 of 0 differ)"
    failed = ctx.check("cases", Status.FAIL, "1 of 1 differs", judged=Items(0, "answers differing"))
    assert failed.status is Status.FAIL and not failed.undecided  # a finding stands whatever the count


def test_a_pass_that_could_not_catch_the_materiality_is_undecided() -> None:
    ctx = _ctx()
    wide = ctx.check("cases", Status.PASS, "0 of 10 differ", judged=Items(10, "answers differing", materiality=0.05))
    assert wide.undecided and wide.status is Status.WARN
    assert wide.reason.startswith("undecided: would catch ≥ 25.9% of answers differing")
    assert wide.detection_limit is not None and not wide.detection_limit.within_materiality
    narrow = ctx.check("cases", Status.PASS, "0 of 100 differ", judged=Items(100, "answers differing", materiality=0.05))
    assert narrow.status is Status.PASS and not narrow.undecided
    assert narrow.detection_limit is not None and narrow.detection_limit.effect < 0.05


def test_nothing_judged_because_the_reference_fails_every_item_is_advisory() -> None:
    """The model cannot do the task on either side: nothing could regress from the reference, so
    the check says so without holding the run (the gate's coverage counts the items)."""
    check = _ctx().check("tool_calls", Status.PASS, "6 cases neither target gets right",
                         judged=Items(0, "tool-call cases", reference_fails_all=True))
    assert check.undecided and check.status is Status.WARN and not check.blocking
    assert check.reason.startswith("not judged: the reference fails every item too")
    held = _ctx().check("tool_calls", Status.PASS, "6 cases at a near tie", judged=Items(0, "tool-call cases"))
    assert held.undecided and held.blocking  # nothing judged for another reason: the evidence, not the model


def test_every_kind_of_limit_fits_the_summary_schema() -> None:
    """summary.json's schema holds each kind a check can state (an exact item's power is 1)."""
    import jsonschema

    from gatekeeper.schemas import load

    schema = load("summary.schema.json")["$defs"]["check"]["properties"]["detection_limit"]
    for limit in (items_limit(9, "answers differing"), exact("difference from the reference's answer"),
                  DetectionLimit(0.031, "output_tokens_per_s at concurrency 8", "bound"),
                  DetectionLimit(0.05, "request seconds per output token", "regression", 0.95, 0.05),
                  tolerance(0.01, "a mean |Δ logprob| (nats) above", 203), exact("canary answer other than 'OK'", 3)):
        assert limit is not None
        jsonschema.validate(limit_json(limit), schema)


def test_a_pass_whose_items_could_never_reach_its_failure_count_is_undecided() -> None:
    """Two judged items cannot show the three failures a check needs: it could never have fired."""
    check = _ctx().check("cases", Status.PASS, "0 of 2 differ", judged=Items(2, "answers differing", fail_at=3))
    assert check.undecided and check.status is Status.WARN
    assert check.reason.startswith("undecided: 2 judged could never reach the 3 of answers differing")
    reached = _ctx().check("cases", Status.PASS, "0 of 3 differ", judged=Items(3, "answers differing", fail_at=3))
    assert reached.status is Status.PASS and not reached.undecided


def test_exact_and_tolerance_limits_say_what_they_compare() -> None:
    assert exact("canary answer other than 'OK'").text() == "would catch any canary answer other than 'OK' (exact)"
    assert exact("protocol deviation", 7).text() == "would catch any protocol deviation (exact, 7 judged)"
    stated = tolerance(0.001, "a mean |Δ logprob| (nats) above", 203)
    assert stated.text() == "would catch a mean |Δ logprob| (nats) above 0.001 (its tolerance; exact over 203 judged)"
    assert stated.within_materiality  # a tolerance is the policy's own margin (or the noise floor's): no materiality


@pytest.mark.parametrize(("n", "base_failed"), [(672, 0), (672, 3), (100, 0)])
def test_a_fisher_test_catches_a_failure_share_at_its_limit_95_percent_of_the_time(n: int, base_failed: int) -> None:
    """Simulated through scipy's Fisher exact test itself, the baseline's count held as observed."""
    from scipy.stats import fisher_exact

    limit = fisher_limit(n, base_failed, n, 0.05, "requests failing")
    assert limit is not None and limit.judged == n
    rng = np.random.default_rng(3)
    failed = rng.binomial(n, limit.effect, 2_000)
    caught = [fisher_exact([[k, n - k], [base_failed, n - base_failed]], alternative="greater")[1] < 0.05 for k in failed]
    assert np.mean(caught) >= 0.94


def test_too_few_items_for_any_fisher_finding_state_no_limit() -> None:
    assert fisher_limit(2, 0, 2, 0.05, "requests failing") is None


def test_gate_4s_nan_check_with_no_answer_watched_is_undecided_not_a_pass() -> None:
    from gatekeeper.gates.longctx.gate import _nan_check
    from gatekeeper.gates.longctx.traffic import Watched

    ctx = _ctx()
    ep = Endpoint("candidate", "http://127.0.0.1:9", "m")  # never asked
    _nan_check(ctx, Watched(ep, logprobs=True))
    check = ctx.checks[-1]
    assert check.status is Status.WARN and check.undecided and check.detection_limit is None, check
