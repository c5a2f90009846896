"""A gate's status is its worst check, but a question not asked (an advisory SKIP, outside
coverage) does not make a gate that judged everything else a SKIP: a llama.cpp run whose golden
gate passed 14 cases and could not ask the two `json_schema` ones showed the gate as SKIP."""

from __future__ import annotations

from gatekeeper.results import CheckResult, Status, worst_status


def _check(status: Status, blocking: bool = True) -> CheckResult:
    return CheckResult(id=f"g.{status.value.lower()}{'' if blocking else '_advisory'}", gate="g", status=status, blocking=blocking,
                       reason="why")


def test_an_advisory_skip_beside_passes_leaves_the_gate_passed():
    assert worst_status([_check(Status.PASS), _check(Status.SKIP, blocking=False)]) is Status.PASS


def test_a_blocking_skip_marks_the_gate_skipped():
    assert worst_status([_check(Status.PASS), _check(Status.SKIP)]) is Status.SKIP


def test_a_warn_fail_or_error_still_wins():
    advisory_skip = _check(Status.SKIP, blocking=False)
    for worst in (Status.WARN, Status.FAIL, Status.ERROR):
        assert worst_status([_check(Status.PASS), advisory_skip, _check(worst, blocking=False)]) is worst


def test_a_gate_of_skips_only_or_of_nothing_is_skipped():
    assert worst_status([_check(Status.SKIP, blocking=False)]) is Status.SKIP
    assert worst_status([]) is Status.SKIP


def test_the_one_status_order_puts_a_check_that_could_not_run_worst():
    assert [s.severity for s in (Status.PASS, Status.SKIP, Status.WARN, Status.FAIL, Status.ERROR)] == [0, 1, 2, 3, 4]
    assert Status.worst([Status.WARN, Status.ERROR, Status.FAIL]) is Status.ERROR
    assert Status.worst([], default=Status.PASS) is Status.PASS
