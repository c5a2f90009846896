"""A PROMOTE's headline names every gate that ran and judged nothing that blocks: a headline never
reads as if a question was answered that was not asked (the performance gate without a baseline for a
URL candidate against the bundled reference)."""

from __future__ import annotations

from gatekeeper.results import CheckResult, GateResult, RunResult, Status, Verdict


def _gate(gate_id: str, *checks: tuple[str, Status, bool, str]) -> GateResult:
    made = tuple(CheckResult(id=f"{gate_id}.{name}", gate=gate_id, status=status, blocking=blocking, reason=reason) for name, status,
                 blocking, reason in checks)
    return GateResult(id=gate_id, stage=1, title=gate_id, description="", status=Status.PASS, checks=made)


def _run(verdict: Verdict, *gates: GateResult) -> RunResult:
    return RunResult("r", "", "", verdict, (), (), gates)


def test_a_promote_names_the_gate_that_judged_nothing_with_why():
    golden = _gate("golden", ("a", Status.PASS, True, "same"), ("b", Status.SKIP, False, "not run: capability"))
    perf = _gate("performance", ("not_applicable", Status.SKIP, False,
                                 "not run: no performance baseline for a URL candidate against the bundled reference"))
    run = _run(Verdict.PROMOTE, golden, perf)
    assert [g.id for g in run.unjudged] == ["performance"]
    assert run.headline == ("PROMOTE (performance not judged: no performance baseline for a URL candidate against the "
                            "bundled reference)")
    assert _run(Verdict.PROMOTE, golden).headline == "PROMOTE"


def test_an_undecided_or_advisory_only_gate_judged_nothing_but_a_blocking_pass_did():
    undecided = CheckResult(id="shadow.rule", gate="shadow", status=Status.WARN, blocking=True, reason="undecided: …", undecided=True)
    shadow = GateResult(id="shadow", stage=5, title="shadow", description="", status=Status.WARN, checks=(undecided,))
    advisory = _gate("startup", ("version", Status.PASS, False, "0.1.0"))
    run = _run(Verdict.PROMOTE, shadow, advisory, _gate("golden", ("a", Status.PASS, True, "same")))
    assert [g.id for g in run.unjudged] == ["shadow", "startup"]
    assert _run(Verdict.HOLD, shadow).headline == "HOLD"  # a HOLD's reasons say what held it
