"""`performance.errors_under_load`: did the candidate fail more requests under load than the baseline?

Failures count on both sides: each side's failed requests out of its measured ones, compared by
a one-sided Fisher exact test (scipy) of "the candidate's failure rate is higher". Three outcomes:

- PASS: the candidate failed no request, or no larger a share than the baseline did; it states the
  share of failing requests it would have caught (95% power: the fewest failures the test calls
  beyond chance, reached with that probability);
- FAIL: it failed a larger share and the test rejects equal rates at the gate's `alpha`;
- undecided: a larger share, not significantly (one failure of 400 against none): not judged,
  HOLD — a transient error shared by both servers does not roll back, and a candidate that
  fails more is not promoted on a sample too small to tell; so is a PASS on so few requests that
  no count of failures could have been beyond chance.
"""

from __future__ import annotations

from dataclasses import dataclass

from gatekeeper.detection import DetectionLimit, fisher_limit
from gatekeeper.results import Status


@dataclass(frozen=True)
class ErrorsJudgement:
    """The errors check's outcome: its status, whether it is undecided, its reason and the test's p."""

    status: Status
    undecided: bool
    reason: str
    p: float | None
    limit: DetectionLimit | None = None  # a PASS's: the failure share it would have caught


def judge_errors(candidate_failed: int, candidate_total: int, baseline_failed: int, baseline_total: int,
                 alpha: float) -> ErrorsJudgement:
    """Compare the two sides' failure counts (see the module docstring)."""
    rates = (f"the candidate failed {candidate_failed} of {candidate_total} requests under load, "
             f"the baseline {baseline_failed} of {baseline_total}")
    if candidate_total == 0 or baseline_total == 0:
        return ErrorsJudgement(Status.WARN, True, f"undecided: nothing to compare ({rates})", None)
    limit = fisher_limit(candidate_total, baseline_failed, baseline_total, alpha, "the candidate's requests failing under load")
    if limit is None:
        return ErrorsJudgement(Status.WARN, True, f"undecided: {rates} — too few requests for any count of failures to "
                               f"be beyond chance at alpha {alpha:g}", None)
    if candidate_failed == 0:
        return ErrorsJudgement(Status.PASS, False, f"the candidate answered all {candidate_total} requests under load"
                               + (f" (the baseline failed {baseline_failed})" if baseline_failed else ""), None, limit)
    c_rate = candidate_failed / candidate_total
    b_rate = baseline_failed / baseline_total
    if c_rate <= b_rate:
        return ErrorsJudgement(Status.PASS, False, f"{rates}: no larger a share", None, limit)
    p = _p(candidate_failed, candidate_total, baseline_failed, baseline_total)
    if p < alpha:
        return ErrorsJudgement(Status.FAIL, False, f"{rates}: more, beyond chance (Fisher exact, one-sided p = {p:.2g} "
                               f"< alpha {alpha:g})", p)
    return ErrorsJudgement(Status.WARN, True, f"undecided: {rates} — more, but not beyond chance (Fisher exact, "
                           f"one-sided p = {p:.2g} ≥ alpha {alpha:g}); more requests would tell", p)


def _p(candidate_failed: int, candidate_total: int, baseline_failed: int, baseline_total: int) -> float:
    table = [[candidate_failed, candidate_total - candidate_failed], [baseline_failed, baseline_total - baseline_failed]]
    from scipy.stats import fisher_exact  # when the gate judges, not when a plan is made (0.7 s of every command)

    return float(fisher_exact(table, alternative="greater").pvalue)

