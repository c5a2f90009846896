"""`performance.errors_under_load`: did the candidate fail more requests under load than the baseline?

Failures count on both sides: each side's failed requests out of its measured ones, compared by
a one-sided Fisher exact test (scipy) of "the candidate's failure rate is higher". Three outcomes:

- PASS: the candidate failed no request, or no larger a share than the baseline did;
- FAIL: it failed a larger share and the test rejects equal rates at the gate's `alpha`;
- undecided: a larger share, not significantly (one failure of 400 against none): not judged,
  HOLD — a transient error shared by both servers does not roll back, and a candidate that
  fails more is not promoted on a sample too small to tell.
"""

from __future__ import annotations

from dataclasses import dataclass

from scipy.stats import fisher_exact

from gatekeeper.results import Status


@dataclass(frozen=True)
class ErrorsJudgement:
    """The errors check's outcome: its status, whether it is undecided, its reason and the test's p."""

    status: Status
    undecided: bool
    reason: str
    p: float | None


def judge_errors(candidate_failed: int, candidate_total: int, baseline_failed: int, baseline_total: int,
                 alpha: float) -> ErrorsJudgement:
    """Compare the two sides' failure counts (see the module docstring)."""
    rates = (f"the candidate failed {candidate_failed} of {candidate_total} requests under load, "
             f"the baseline {baseline_failed} of {baseline_total}")
    if candidate_total == 0 or baseline_total == 0:
        return ErrorsJudgement(Status.WARN, True, f"undecided: nothing to compare ({rates})", None)
    if candidate_failed == 0:
        return ErrorsJudgement(Status.PASS, False, f"the candidate answered all {candidate_total} requests under load"
                               + (f" (the baseline failed {baseline_failed})" if baseline_failed else ""), None)
    c_rate = candidate_failed / candidate_total
    b_rate = baseline_failed / baseline_total
    if c_rate <= b_rate:
        return ErrorsJudgement(Status.PASS, False, f"{rates}: no larger a share", None)
    table = [[candidate_failed, candidate_total - candidate_failed], [baseline_failed, baseline_total - baseline_failed]]
    p = float(fisher_exact(table, alternative="greater").pvalue)
    if p < alpha:
        return ErrorsJudgement(Status.FAIL, False, f"{rates}: more, beyond chance (Fisher exact, one-sided p = {p:.2g} "
                               f"< alpha {alpha:g})", p)
    return ErrorsJudgement(Status.WARN, True, f"undecided: {rates} — more, but not beyond chance (Fisher exact, "
                           f"one-sided p = {p:.2g} ≥ alpha {alpha:g}); more requests would tell", p)
