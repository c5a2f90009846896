"""Gate 2's findings (gates/numerics/checks.py, gates/finding.py): each check's metrics are its
finding's `metrics()`, with the keys in the order the gate has always written them (a
tokenization PASS without the first differing text); `of(check)` reads a finding back from a
recorded check or a stored summary.json, and the correctness table reads the NLL drift."""

from __future__ import annotations

from findings_util import assert_keys_in_order, assert_round_trips

from gatekeeper.gates.finding import Finding
from gatekeeper.gates.numerics import checks
from gatekeeper.gates.numerics.checks import DriftFinding, NanInfFinding, ScoringFinding, TokenizationFinding
from gatekeeper.results import CheckResult, Status

FINDINGS: dict[str, Finding] = {
    checks.SCORING: ScoringFinding(prompts=8, scored=7, top_k=5),
    checks.TOKENIZATION: TokenizationFinding(texts=8, differ=1, first_text="Once upon a time", first_position=3),
    checks.NAN_INF: NanInfFinding(nan_inf=0, missing=2),
    checks.NLL_DRIFT: DriftFinding(value=0.004, limit=0.02, policy=0.02, noise_floor=0.0, dtype="bfloat16"),
}
KEYS = {
    checks.SCORING: "prompts scored top_k",
    checks.TOKENIZATION: "texts differ first_text first_position",
    checks.NAN_INF: "nan_inf missing",
    checks.NLL_DRIFT: "value limit policy noise_floor dtype",
}


def test_each_finding_writes_the_keys_the_gate_always_wrote_in_order() -> None:
    assert_keys_in_order(FINDINGS, KEYS)
    assert TokenizationFinding(texts=8, differ=0).metrics() == {"texts": 8, "differ": 0}  # a PASS names no text


def test_a_finding_reads_back_what_it_wrote_in_memory_and_from_json() -> None:
    assert_round_trips(FINDINGS, checks.GATE)


def test_a_skipped_drift_check_reads_as_no_figures() -> None:
    skipped = CheckResult(id=checks.NLL_DRIFT, gate=checks.GATE, status=Status.SKIP, blocking=True, reason="not run", metrics={})
    assert DriftFinding.of(skipped) == DriftFinding()
