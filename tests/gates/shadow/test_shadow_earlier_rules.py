"""Gate 5's rules read from the earlier gates PASS only when those gates judged something:
a canary both sides missed, or gate 2 with nothing but its NaN check, is "not judged"."""

from __future__ import annotations

from report_runs import _check, _gate

from gatekeeper.gates.shadow.earlier_rules import earlier_rule
from gatekeeper.results import Status


def _probe(*checks):
    return earlier_rule("deterministic_probe", [_gate("startup", 1, "Startup", list(checks))])


def test_the_canary_rule_passes_only_on_a_canary_that_passed():
    assert _probe(_check("startup", "canary.candidate", Status.PASS, "answered 'OK'")).status is Status.PASS
    both_missed = _probe(_check("startup", "canary.candidate", Status.WARN, "the reference also misses 'OK'"))
    assert both_missed.status is Status.SKIP and "no canary passed" in both_missed.reason
    errored = _probe(_check("startup", "canary.candidate", Status.ERROR, "not judged"))
    assert errored.status is Status.SKIP
    assert _probe(_check("startup", "canary.candidate", Status.FAIL, "answered '!!!!'")).status is Status.FAIL


def test_the_drift_rule_does_not_pass_on_the_nan_check_alone():
    def drift(*checks):
        return earlier_rule("logit_drift", [_gate("numerics", 2, "Numerics", list(checks))])

    nan_only = drift(_check("numerics", "nan_inf", Status.PASS, "no NaN/Inf"),
                     _check("numerics", "max_abs_delta", Status.SKIP, "reference unstable"))
    assert nan_only.status is Status.SKIP
    judged = drift(_check("numerics", "nan_inf", Status.PASS, "no NaN/Inf"),
                   _check("numerics", "max_abs_delta", Status.PASS, "within 1e-4"))
    assert judged.status is Status.PASS
