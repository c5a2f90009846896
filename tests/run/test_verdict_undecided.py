"""An undecided check — asked, but the evidence did not answer it — never lets a run PROMOTE
when it is blocking, is named in the reasons, and is not counted as judged."""

from __future__ import annotations

from gatekeeper.gates.interface import GateContext
from gatekeeper.results import CheckResult, GateResult, Status, Verdict
from gatekeeper.verdict import decide


def _gate(*checks: CheckResult) -> GateResult:
    return GateResult(id="g", stage=1, title="G", description="", status=Status.WARN, checks=checks)


def _check(status: Status, blocking: bool = True, undecided: bool = False) -> CheckResult:
    return CheckResult(id=f"g.{status.value.lower()}{'_undecided' if undecided else ''}", gate="g", status=status, blocking=blocking,
                       reason="the interval allows up to 9% worse", undecided=undecided)


def test_a_blocking_undecided_check_holds_and_is_named():
    verdict, reasons = decide([_gate(_check(Status.PASS), _check(Status.WARN, undecided=True))])
    assert verdict is Verdict.HOLD
    assert reasons == ["g.warn_undecided: UNDECIDED — the interval allows up to 9% worse"]


def test_an_advisory_undecided_check_does_not_hold():
    verdict, _ = decide([_gate(_check(Status.PASS), _check(Status.WARN, blocking=False, undecided=True))])
    assert verdict is Verdict.PROMOTE


def test_a_decided_warn_still_promotes():
    assert decide([_gate(_check(Status.PASS), _check(Status.WARN))])[0] is Verdict.PROMOTE


def test_a_blocking_fail_still_rolls_back_beside_an_undecided_check():
    assert decide([_gate(_check(Status.FAIL), _check(Status.WARN, undecided=True))])[0] is Verdict.ROLLBACK


def test_coverage_counts_an_undecided_check_as_not_judged():
    ctx = GateContext(gate_id="g", reference=None, candidate=None, settings=None, blocking_rule=lambda check_id: True, capabilities={},
                      record=lambda result: None)  # type: ignore[arg-type]
    ctx.check("a", Status.PASS, "fine")
    ctx.check("b", Status.WARN, "open", undecided=True)
    cov = ctx.coverage(0.5)
    assert cov.judged == 1 and dict(cov.unjudged) == {"undecided": 1}
