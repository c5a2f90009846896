"""Gate 4's findings (gates/longctx/checks.py, gates/finding.py): each check's metrics are its
finding's `metrics()`, with the keys in the order the gate has always written them; `of(check)`
reads a finding back from a recorded check or a stored summary.json; and the correctness table's
Long context row reads the needle grid's finding."""

from __future__ import annotations

from types import SimpleNamespace

from gatekeeper.gates.finding import Finding
from gatekeeper.gates.longctx import checks
from gatekeeper.gates.longctx.checks import (AgreementFinding, BatchFeaturesFinding, BoundaryFinding, CacheMetricsFinding,
                                             ColdWarmFinding, DecayFinding, JsonSchemaFinding, NanInfFinding,
                                             NeedleGridFinding, RecallFinding, SessionsSetAside, SharedPrefixFinding,
                                             ToolCallsFinding, ToolResultFinding, ToolStreamFinding,
                                             TriggerConditionsFinding)
from gatekeeper.report.correctness.table import build_table
from findings_util import assert_keys_in_order, assert_round_trips, stored
from gatekeeper.results import CheckResult, Coverage, GateResult, Status

GRID = NeedleGridFinding(cells=9, judged=6, regressions=1, reference_unstable=0, both_fail=3, both_fail_differs=1, limit=0,
                         near_ties=0, missed_at_near_tie=0, confident_divergences=1, reference_pass=6, candidate_pass=5,
                         longest_candidate_pass=2000, lengths=(256, 1024, 2000), depths=(0.0, 0.5, 1.0),
                         regressions_by_length={"256": 0, "1024": 1, "2000": 0},
                         differ_by_length={"256": 0, "1024": 1, "2000": 1}, exact_lengths=True, refused_by_both=0)
FINDINGS: dict[str, Finding] = {
    checks.NEEDLE_GRID: GRID,
    checks.BLOCK_BOUNDARY: BoundaryFinding(lengths=(1023, 1024, 1025), mismatches=0, block_size=16, exact_lengths=True,
                                           refused_by_both=0),
    checks.COLD_WARM: ColdWarmFinding(tokens=1024, warm_cached_tokens=None, reference="QC-7", cold="QC-7", warm="QC-8"),
    checks.SHARED_PREFIX: SharedPrefixFinding(mismatches=1, requests=4, shared=2, candidate_recalled=1, refused_by_both=0),
    checks.TOOL_CALLS: ToolCallsFinding(cases=2, regressions=0, malformed=1, both_fail=1, both_fail_differs=0, near_ties=0),
    checks.TOOL_RESULT: ToolResultFinding(expected="sent.", reference="sent.", candidate="sent sent.", both_fail=None,
                                          near_tie=False),
    checks.TOOL_STREAM: ToolStreamFinding(cases=2, differ=0, differ_both_fail=1),
    checks.JSON_SCHEMA: JsonSchemaFinding(cases=1, regressions=0, invalid_json=0, both_fail=1, both_fail_differs=0,
                                          near_ties=0, refused_by_both=0),
    checks.SESSION_DECAY: DecayFinding(excess_slope=0.01, limit=0.03, p_value=0.2, p_holm=0.4, alpha=0.05, sessions=6,
                                       one_cell=0.02, reference_slopes=(0.1, 0.0), candidate_slopes=(0.0, 0.0),
                                       sqdr_reference=0.01, sqdr_candidate=0.02, sqdr_excess=0.01, regressions=2,
                                       improvements=0, cells=36, reference_by_round=(1.0, 0.5),
                                       candidate_by_round=(1.0, 0.4)),
    checks.SESSION_RECALL: RecallFinding(recall_drop=0.0, limit=0.05, p_value=1.0, p_holm=1.0, alpha=0.05, sessions=6,
                                         one_cell=0.03, reference_recall=(0.5, 1.0), candidate_recall=(0.5, 1.0)),
    checks.SESSION_AGREEMENT: AgreementFinding(disagreements=1, near_ties=0, cells=36, rate=1 / 36, limit=0.05,
                                               agreement_by_round=(1.0, 0.9)),
    checks.TRIGGER_CONDITIONS: TriggerConditionsFinding(conditions={"concurrency": "present", "prefix caching": "unknown"}),
    checks.BATCH_FEATURES: BatchFeaturesFinding(features=7, judged=6, broken=("seeded sampling",), changed=(),
                                                batch_tokens=2048, prompt_tokens=1843, fillers=2),
    checks.NAN_INF: NanInfFinding(non_finite=0, missing=1, answers_hit=0, answers=98),
    checks.METRICS: CacheMetricsFinding(prefix_cache_hits=39648.0, prefix_cache_queries=110347.0),
}
# The keys each check has always written, in order (summary.json readers and the report rely on them).
KEYS = {
    checks.NEEDLE_GRID: "cells judged regressions reference_unstable both_fail both_fail_differs limit near_ties "
                        "missed_at_near_tie precision_flips forced_departures precision_flip_limit confident_divergences "
                        "reference_pass candidate_pass longest_candidate_pass "
                        "lengths depths regressions_by_length differ_by_length exact_lengths refused_by_both",
    checks.BLOCK_BOUNDARY: "lengths mismatches block_size exact_lengths refused_by_both",
    checks.COLD_WARM: "tokens warm_cached_tokens reference cold warm",
    checks.SHARED_PREFIX: "mismatches requests shared candidate_recalled refused_by_both",
    checks.TOOL_CALLS: "cases regressions malformed both_fail both_fail_differs near_ties precision_flips precision_flip_limit",
    checks.TOOL_RESULT: "expected reference candidate both_fail near_tie precision_flip",
    checks.TOOL_STREAM: "cases differ differ_both_fail",
    checks.JSON_SCHEMA: "cases regressions invalid_json both_fail both_fail_differs near_ties refused_by_both precision_flips "
                          "precision_flip_limit",
    checks.SESSION_DECAY: "excess_slope limit p_value p_holm alpha sessions one_cell reference_slopes candidate_slopes "
                          "sqdr_reference sqdr_candidate sqdr_excess regressions improvements cells reference_by_round "
                          "candidate_by_round",
    checks.SESSION_RECALL: "recall_drop limit p_value p_holm alpha sessions one_cell reference_recall candidate_recall",
    checks.SESSION_AGREEMENT: "disagreements near_ties cells rate limit agreement_by_round",
    checks.BATCH_FEATURES: "features judged broken changed batch_tokens prompt_tokens fillers",
    checks.NAN_INF: "non_finite missing answers_hit answers",
    checks.METRICS: "prefix_cache_hits prefix_cache_queries",
}


def check(check_id: str, metrics: dict[str, object], status: Status = Status.PASS) -> CheckResult:
    return CheckResult(id=check_id, gate=checks.GATE, status=status, blocking=True, reason="", metrics=dict(metrics))



def test_each_finding_writes_the_keys_the_gate_always_wrote_in_order() -> None:
    assert_keys_in_order(FINDINGS, KEYS)


def test_a_finding_reads_back_what_it_wrote_in_memory_and_from_json() -> None:
    assert_round_trips(FINDINGS, checks.GATE)


def test_tuples_are_written_as_lists() -> None:
    written = GRID.metrics()
    assert written["lengths"] == [256, 1024, 2000] and written["depths"] == [0.0, 0.5, 1.0]
    assert BatchFeaturesFinding.of(check(checks.BATCH_FEATURES, FINDINGS[checks.BATCH_FEATURES].metrics())).broken == (
        "seeded sampling",)


def test_the_short_forms() -> None:
    assert NanInfFinding(answers=0).metrics() == {"answers": 0}  # nothing watched
    assert SessionsSetAside(error_kind="timeout", role="candidate", sessions_set_aside=3).metrics() == {
        "error_kind": "timeout", "role": "candidate", "sessions_set_aside": 3}
    assert TriggerConditionsFinding(conditions={"uneven growth": "absent"}).metrics() == {"uneven growth": "absent"}


def test_a_grid_check_without_counts_reads_as_zero() -> None:
    """An ERROR grid check (its metrics the request's error) and an older, shorter summary.json."""
    errored = NeedleGridFinding.of(check(checks.NEEDLE_GRID, {"error_kind": "timeout", "status_code": None}, Status.ERROR))
    assert (errored.cells, errored.reference_pass, errored.candidate_pass, errored.judged) == (0, 0, 0, 0)
    short = NeedleGridFinding.from_metrics({"cells": 9, "reference_pass": 6, "candidate_pass": 6, "judged": 6})
    assert (short.cells, short.judged, short.regressions) == (9, 6, 0)


def test_the_long_context_row_reads_the_grid_finding() -> None:
    for load in (dict, stored):
        grid = check(checks.NEEDLE_GRID, load(GRID.metrics()), Status.FAIL)
        gate = GateResult(id=checks.GATE, stage=4, title="Long context and tool calling", description="", status=Status.FAIL,
                          checks=(grid,), coverage=Coverage(6))
        run = SimpleNamespace(gates=(gate,))
        row = next(r for r in build_table(run) if r.dimension == "Long context")  # type: ignore[arg-type]
        assert (row.reference, row.candidate, row.judged, row.status) == ("6/9 (67%)", "5/9 (56%)", "6/9 (67%)", "FAIL")
