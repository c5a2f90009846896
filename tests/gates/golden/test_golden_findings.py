"""Gate 3's findings (gates/golden/checks.py, gates/finding.py): each check's metrics are its
finding's `metrics()`, with the keys in the order the gate has always written them (a case's
near-tie review before its pass flags; the pass rate's per-family objects); `of(check)` reads a
finding back from a recorded check or a stored summary.json, and the correctness table reads them."""

from __future__ import annotations


from gatekeeper.gates.finding import Finding
from gatekeeper.gates.golden import checks
from gatekeeper.gates.golden.checks import (CaseFinding, FamilyRates, NearTie, PassRateFinding, ReferenceFailed,
                                            RepeatFinding, StreamCutsFinding, StreamFinding)
from gatekeeper.golden.assertions import DEGENERATE_OUTPUT
from findings_util import assert_keys_in_order, assert_round_trips
from gatekeeper.results import CheckResult, Status

TIE = NearTie(index=3, reference=" Paris", candidate=" paris", reference_gap=0.02, candidate_gap=0.01, max_gap=0.1)
CASE = CaseFinding(assertions=3, failed=("equals(value='OK')",), candidate_finish_reason="stop", candidate_tokens=2,
                   reference_finish_reason="stop", reference_tokens=2, similarity=0.5, reference_self_similarity=1.0,
                   near_tie=TIE, judged=True, candidate_passes=False, reference_passes=True)
FINDINGS: dict[str, Finding] = {
    checks.case("canary-ok"): CASE,
    checks.case("tool-weather") + checks.STREAM_SUFFIX: StreamFinding(
        streamed_calls=1, plain_calls=1, streamed_finish_reason=None, plain_finish_reason="tool_calls", similarity=1.0,
        stream_difference=("finish_reason None vs 'tool_calls'",), reference_stream_difference=None),
    checks.case("eos-1"): ReferenceFailed(error_kind="timeout", role="reference"),
    checks.CANDIDATE_REPEAT: RepeatFinding(candidate_changed=2, reference_changed=1, cases=17, only_candidate=("eos-1",)),
    checks.STREAM_CUTS: StreamCutsFinding(candidate_cut=2, candidate_streams=8, reference_cut=1, reference_streams=8,
                                          p_value=0.5, alpha=0.01),
    checks.PASS_RATE: PassRateFinding(pass_rate=0.9, reference_pass_rate=1.0, reference_noise=0.0, cases=2,
                                      statuses={"PASS": 1, "FAIL": 1}, max_pass_rate_drop=0.05, families={
                                          "eos": FamilyRates(cases=2, candidate_pass_rate=0.5, reference_pass_rate=None,
                                                             statuses={"PASS": 1, "FAIL": 1})}),
}
KEYS = {
    checks.case("canary-ok"): "assertions failed candidate_finish_reason candidate_tokens reference_finish_reason "
                              "reference_tokens similarity reference_self_similarity near_tie judged candidate_passes "
                              "reference_passes",
    checks.case("tool-weather") + checks.STREAM_SUFFIX: "streamed_calls plain_calls streamed_finish_reason "
                                                        "plain_finish_reason similarity stream_difference "
                                                        "reference_stream_difference",
    checks.case("eos-1"): "error_kind role",
    checks.CANDIDATE_REPEAT: "candidate_changed reference_changed cases only_candidate",
    checks.STREAM_CUTS: "candidate_cut candidate_streams reference_cut reference_streams p_value alpha",
    checks.PASS_RATE: "pass_rate reference_pass_rate reference_noise cases statuses families max_pass_rate_drop",
}


def check(check_id: str, metrics: dict[str, object], status: Status = Status.PASS, reason: str = "") -> CheckResult:
    return CheckResult(id=check_id, gate=checks.GATE, status=status, blocking=True, reason=reason, metrics=dict(metrics))



def test_each_finding_writes_the_keys_the_gate_always_wrote_in_order() -> None:
    assert_keys_in_order(FINDINGS, KEYS)
    assert list(CaseFinding(near_tie=None).metrics())[8:9] == ["judged"]  # no review: no near_tie key
    family = FINDINGS[checks.PASS_RATE].metrics()["families"]
    assert family == {"eos": {"cases": 2, "candidate_pass_rate": 0.5, "reference_pass_rate": None,
                              "statuses": {"PASS": 1, "FAIL": 1}}}


def test_a_finding_reads_back_what_it_wrote_in_memory_and_from_json() -> None:
    assert_round_trips(FINDINGS, checks.GATE)


def test_a_check_without_the_case_keys_reads_as_not_judged_and_not_passed() -> None:
    """An ERROR case, a stream, and a case the candidate could not be asked (gate 1's lost feature)."""
    for metrics in ({"error_kind": "timeout", "role": "reference"}, FINDINGS[checks.STREAM_CUTS].metrics()):
        found = CaseFinding.of(check(checks.case("x"), metrics, Status.ERROR))
        assert (found.judged, found.candidate_passes, found.reference_passes, found.lost) == (False, False, False, None)
    assert CaseFinding.of(check(checks.case("x"), {"lost": "tools"}, Status.SKIP)).lost == "tools"


def test_degenerate_output_is_read_from_the_check() -> None:
    assert checks.is_degenerate(check(checks.case("x"), CASE.metrics(), Status.FAIL, f"FAIL: {DEGENERATE_OUTPUT}: '!!!!'"))
    assert not checks.is_degenerate(check(checks.case("x"), CASE.metrics(), Status.WARN, f"WARN: {DEGENERATE_OUTPUT}"))
