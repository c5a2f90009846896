"""A HOLD's reasons end in the next step: what would decide or clear each cause, naming the setting
or the command — the gate's own step where it has one, else the step its status calls for."""

from __future__ import annotations

from pathlib import Path

from gatekeeper.config.policy import load_policy
from gatekeeper.gates.registry import settings_types
from gatekeeper.results import CheckResult, GateResult, Status, Verdict
from gatekeeper.run.next_steps import stepper
from gatekeeper.verdict import decide

DEFAULT = Path(__file__).resolve().parents[2] / "gates" / "default.yaml"


def _check(check_id: str, status: Status, blocking: bool = True, undecided: bool = False, reason: str = "why") -> CheckResult:
    return CheckResult(id=check_id, gate=check_id.split(".")[0], status=status, blocking=blocking, reason=reason, undecided=undecided)


def test_each_cause_of_a_hold_gets_its_step_once():
    step = stepper(load_policy(DEFAULT, settings_types()), Path("reports/r1"))
    rule = _check("shadow.rule.answers_differ", Status.WARN, undecided=True)
    rule2 = _check("shadow.rule.json_parse", Status.WARN, undecided=True)
    figure = _check("performance.c1.tpot_p50_s", Status.WARN, undecided=True)  # a guardrail: measured once per level
    primary = _check("performance.primary", Status.WARN, undecided=True)  # decided in launch rounds
    error = _check("longctx.session_decay", Status.ERROR)
    gone = _check("golden.reference_unusable", Status.ERROR)
    skip = _check("golden.tool-weather", Status.SKIP)
    coverage = _check("longctx.coverage", Status.FAIL, blocking=False)
    shared = _check("shadow.candidate_crashed", Status.ERROR, reason="… a defect both builds share … Next: re-run")
    assert "gates.shadow.extension (now 780" in step(rule) and "--resume reports/r1 --redo shadow`" in step(rule)
    assert "gates.performance.level_requests (now 96" in step(figure) and "--redo performance`" in step(figure)
    assert "gates.performance.rounds (now 3–12" in step(primary) and "level_requests" not in step(primary)
    assert "correctness.html#check-longctx.session_decay" in step(error) and "--redo longctx`" in step(error)
    assert "read reference.log" in step(gone)
    assert 'checks: [{match: "golden.tool-weather", blocking: false}]' in step(skip)
    assert "not judged" in step(coverage)
    assert step(shared) is None and step(_check("golden.a", Status.PASS)) is None
    gates = [GateResult(id="shadow", stage=5, title="", description="", status=Status.WARN, checks=(rule, rule2, shared)),
             GateResult(id="longctx", stage=4, title="", description="", status=Status.ERROR, checks=(error,))]
    verdict, reasons = decide(gates, (), step)
    assert verdict is Verdict.HOLD
    assert reasons[0].endswith(f" Next: {step(rule)}")
    assert "Next:" not in reasons[1]  # the same step as the line above: said once
    assert reasons[2].count("Next:") == 1 and reasons[3].endswith(f" Next: {step(error)}")
