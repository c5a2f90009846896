"""The correctness table's golden rows: nothing shown as a PASS that judged nothing, and a failing
streamed variant fails its row (as in a real run whose streamed tool parser breaks)."""

from __future__ import annotations

from gatekeeper.report.correctness.table import build_table
from gatekeeper.results import CheckResult, Coverage, GateResult, RunResult, Status, Verdict


def _check(check_id: str, status: Status, family: str | None = None, **metrics) -> CheckResult:
    return CheckResult(id=check_id, gate=check_id.split(".")[0], status=status, blocking=True, reason="why", metrics=dict(metrics),
                       family=family)


def _gate(gate_id: str, *checks: CheckResult, ran: bool = True) -> GateResult:
    return GateResult(id=gate_id, stage=1, title=gate_id, description="", status=Status.PASS, checks=checks,
                      coverage=Coverage(len(checks), (), 0.5) if ran else None)


def _run(*gates: GateResult) -> RunResult:
    return RunResult("r", "", "", Verdict.HOLD, (), (), gates)


def _rows(run: RunResult) -> dict[str, str]:
    return {row.dimension: row.status for row in build_table(run)}


def test_a_canary_alone_is_not_a_pass_for_the_deterministic_row():
    startup = _gate("startup", _check("startup.canary.candidate", Status.PASS))
    golden = _gate("golden", _check("golden.not_run", Status.SKIP), ran=False)
    assert _rows(_run(startup, golden))["Deterministic"] == "not run"
    failed = _gate("startup", _check("startup.canary.candidate", Status.FAIL))
    assert _rows(_run(failed, golden))["Deterministic"] == "FAIL"  # a canary can still speak against the run


def test_a_failing_streamed_variant_fails_the_structured_row():
    case = dict(judged=True, reference_passes=True, candidate_passes=True)
    plain = _check("golden.tool-weather", Status.PASS, "tool_call", **case)
    stream = _check("golden.tool-weather.stream", Status.FAIL, "tool_call")
    rows = {row.dimension: row for row in build_table(_run(_gate("startup"), _gate("golden", plain, stream)))}
    assert rows["Structured"].status == "FAIL" and "golden.tool-weather.stream" in rows["Structured"].checks
    assert rows["Structured"].candidate == "1/1 (100%)"  # the counts stay the cases'; the variant is not a case
    ok = _check("golden.tool-weather.stream", Status.PASS, "tool_call")
    assert _rows(_run(_gate("startup"), _gate("golden", plain, ok)))["Structured"] == "PASS"


def test_a_row_whose_gate_errored_or_saw_the_candidate_crash_says_so():
    grid = _check("longctx.needle_grid", Status.PASS, cells=25, judged=25, reference_pass=25, candidate_pass=25)
    error = _check("longctx.session_decay", Status.ERROR)
    rows = {row.dimension: row for row in build_table(_run(_gate("startup"), _gate("longctx", grid, error)))}
    assert rows["Long context"].status == "ERROR" and rows["Long context"].checks == ("longctx.session_decay", "longctx.needle_grid")
    crashed = _check("shadow.candidate_crashed", Status.FAIL)
    assert _rows(_run(_gate("startup"), _gate("shadow", crashed)))["Shadow traffic"] == "FAIL"
    assert _rows(_run(_gate("startup"), _gate("longctx", grid)))["Long context"] == "PASS"


def test_cases_not_asked_because_the_candidate_lost_tools_fail_the_structured_row():
    """vLLM 0.32.0 started without a tool parser against 0.31.0 with one (a real run): the tool
    cases are not asked, gate 1 FAILs the capability — the row said WARN beside it, with the
    reference's passes counted over cases it was never asked ("3/17")."""
    json_ok = _check("golden.json-facts-4", Status.PASS, "json", judged=True, reference_passes=True, candidate_passes=True)
    json_both = _check("golden.json-schema-2", Status.WARN, "json", judged=False, reference_passes=False, candidate_passes=False)
    lost = [_check(f"golden.tool-{n}", Status.SKIP, "tool_call", lost="tools") for n in ("weather", "alarm", "flights")]
    row = next(r for r in build_table(_run(_gate("startup"), _gate("golden", json_ok, json_both, *lost)))
               if r.dimension == "Structured")
    assert row.status == "FAIL"
    assert row.reference == "1/2 (50%)" and row.candidate == "1/2 (50%); 3 not asked: the candidate lost tools"
    shared = [_check(f"golden.tool-{n}", Status.SKIP, "tool_call") for n in ("weather", "alarm")]  # neither has tools
    assert _rows(_run(_gate("startup"), _gate("golden", json_ok, *shared)))["Structured"] != "FAIL"
