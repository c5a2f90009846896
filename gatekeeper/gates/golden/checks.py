"""Gate 3's checks and findings that other code reads (the correctness table, gate 5's
`deterministic_probe` rule, matrix path records): which checks are cases, which are their
streamed variants, and a case's outcome, typed. A literal `golden.…` id outside this package is
a test failure (tests/repo/test_architecture.py).

A case's check is `golden.<case id>`; its streamed variant `golden.<case id>.stream`; besides
the cases the gate writes `golden.coverage`, `golden.pass_rate`, `golden.candidate_repeat` and, where both
targets cut streams short, `golden.stream_cuts`.
"""

from __future__ import annotations

from dataclasses import dataclass

from gatekeeper.golden.assertions import DEGENERATE_OUTPUT
from gatekeeper.results import CheckResult, Status

GATE = "golden"
STREAM_SUFFIX = ".stream"
COVERAGE = f"{GATE}.coverage"
PASS_RATE = f"{GATE}.pass_rate"
CANDIDATE_REPEAT = f"{GATE}.candidate_repeat"
STREAM_CUTS = f"{GATE}.stream_cuts"
"""Both targets cut streams short at random: the candidate's rate against the reference's (stream_cuts.py)."""
CANARY_CASE = f"{GATE}.canary-ok"
"""The shipped golden set's `Reply with exactly: OK` case (golden_sets/core.yaml)."""
_NOT_CASES = (COVERAGE, PASS_RATE, CANDIDATE_REPEAT, STREAM_CUTS)


def case(case_id: str) -> str:
    """The check id of a golden case."""
    return f"{GATE}.{case_id}"


def is_streamed(check: CheckResult) -> bool:
    """A case's streamed variant (`<case>.stream`)."""
    return check.id.endswith(STREAM_SUFFIX)


def is_case(check: CheckResult) -> bool:
    """One golden case's own (non-streamed) check."""
    return check.id not in _NOT_CASES and not is_streamed(check)


@dataclass(frozen=True)
class CaseFinding:
    """A golden case's outcome: whether each side passed its assertions, whether the case was
    judged (not both failing alike), whether the candidate's failure was degenerate output, and the
    feature the candidate lost that kept the case from being asked (`lost`)."""

    reference_passes: bool
    candidate_passes: bool
    judged: bool
    degenerate: bool
    lost: str | None = None  # not asked: the case needs this feature, which the candidate lost (the reference has it)

    @staticmethod
    def of(check: CheckResult) -> CaseFinding:
        """The outcome of a case's check."""
        m = check.metrics
        return CaseFinding(m.get("reference_passes") is True, m.get("candidate_passes") is True, m.get("judged") is True,
                           check.status is Status.FAIL and DEGENERATE_OUTPUT in check.reason, m.get("lost"))
