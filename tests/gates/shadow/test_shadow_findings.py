"""Gate 5's findings (gates/shadow/checks.py, gates/finding.py): each check's metrics are its
finding's `metrics()`, with the keys in the order the gate has always written them (a slice's
measures under `metrics`, a near miss's slice before its measure, a rule's extra keys only where
it has them); `of(check)` reads a finding back from a recorded check or a stored summary.json,
and the correctness table reads a stage's overall disagreement."""

from __future__ import annotations

from findings_util import assert_keys_in_order, assert_round_trips

from gatekeeper.gates.finding import Finding
from gatekeeper.gates.shadow import checks
from gatekeeper.gates.shadow.checks import (Latency, MeasureFinding, NearMissFinding, NearMissMeasure, RuleFinding, SliceFinding,
                                            StageFinding, TrafficFinding)
from gatekeeper.results import CheckResult, Status
from gatekeeper.traffic.analysis import MetricResult, SliceResult

MEASURED = MetricResult(name="disagreement", critical=True, label="Pass", candidate_rate=0.04, twin_rate=0.03, eligible=96, p_value=0.4,
                        e_value=1.7, effect=0.01, fired_at=None, upper=0.05, materiality=0.03, counts=(4, 3, 89), alpha=0.004)
SLICE = SliceFinding.analysed(SliceResult("all", 96, 95, {"reference_failed": 1}, (MEASURED,), 97.5))
STAGE = StageFinding(requests=72, planned=72, stopped_early=False, score=97.5, fired=(), concurrency=4,
                     latency_s={"candidate": Latency(p50=0.12, p95=0.3), "reference": Latency(p50=None, p95=None)},
                     slices=(SLICE,))
FINDINGS: dict[str, Finding] = {
    f"{checks.GATE}.traffic": TrafficFinding(requests=96, skipped=1, tenants={"acme": 60, "beta": 36}, kinds={"chat": 96}),
    checks.stage("wide"): STAGE,
    checks.NEAR_MISS: NearMissFinding(near_misses=(NearMissMeasure.measured(MEASURED, slice="tenant:acme"),)),
    checks.rule("task_success_down"): RuleFinding(rule="task_success_down",
                                                  failed_checks={"json_valid": {"candidate": 2, "twin": 0}}),
    checks.rule("answers_differ"): RuleFinding(rule="answers_differ", forgiven={"a near tie": 3}, stands={},
                                               twin_forgiven={}, pairs_to_decide=400),
    checks.rule("error_rate_up"): RuleFinding(rule="error_rate_up"),
}
MEASURE_KEYS = "name critical label candidate_rate twin_rate eligible p_value e_value effect fired_at upper materiality alpha"
KEYS = {
    f"{checks.GATE}.traffic": "requests skipped tenants kinds",
    checks.stage("wide"): "requests planned stopped_early score fired concurrency latency_s slices",
    checks.NEAR_MISS: "near_misses",
    checks.rule("task_success_down"): "rule failed_checks",
    checks.rule("answers_differ"): "rule forgiven stands twin_forgiven pairs_to_decide",
    checks.rule("error_rate_up"): "rule",
}


def test_each_finding_writes_the_keys_the_gate_always_wrote_in_order() -> None:
    assert_keys_in_order(FINDINGS, KEYS)
    written = STAGE.metrics()
    assert written["latency_s"] == {"candidate": {"p50": 0.12, "p95": 0.3}, "reference": {"p50": None, "p95": None}}
    assert written["slices"] == [{"slice": "all", "pairs": 96, "judged": 95, "unjudged": {"reference_failed": 1},
                                  "score": 97.5, "metrics": [MeasureFinding.measured(MEASURED).metrics()]}]
    assert list(MeasureFinding.measured(MEASURED).metrics()) == MEASURE_KEYS.split()
    near = FINDINGS[checks.NEAR_MISS].metrics()["near_misses"]
    assert isinstance(near, list) and list(near[0]) == ["slice", *MEASURE_KEYS.split()]


def test_a_finding_reads_back_what_it_wrote_in_memory_and_from_json() -> None:
    assert_round_trips(FINDINGS, checks.GATE)


def test_a_stage_reads_its_overall_disagreement_and_a_skipped_stage_none() -> None:
    stage = StageFinding.of(CheckResult(id=checks.stage("wide"), gate=checks.GATE, status=Status.PASS, blocking=True, reason="",
                                        metrics=STAGE.metrics()))
    found = stage.disagreement()
    assert found is not None and (found.candidate_rate, found.twin_rate) == (0.04, 0.03)
    assert stage.overall("task_failure") is None
    skipped = StageFinding.of(CheckResult(id=checks.stage("wide"), gate=checks.GATE, status=Status.SKIP, blocking=True, reason="not run",
                                          metrics={}))
    assert skipped.slices == () and skipped.disagreement() is None and skipped.requests == 0
