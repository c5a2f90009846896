"""The stage rule: where a canary stage stands once its pairs are judged — the one rule the
replay gate (a `shadow.stage.<name>` check) and the live proxy's verdict both apply, each saying
it in its own terms (a check status; PROMOTE / HOLD / ROLLBACK)."""

from __future__ import annotations

from enum import Enum


class Standing(Enum):
    """A stage's standing, worst first."""

    FIRED = "fired"  # a critical measure crossed its sequential test's line
    BELOW_MARGINAL = "below_marginal"  # the score is below score_marginal
    NOT_JUDGED = "not_judged"  # no pair could be compared: nothing was judged
    MARGINAL = "marginal"  # the score is below score_pass (but not score_marginal)
    CLEAN = "clean"  # no measure beyond the noise floor, the score at least score_pass


def standing(fired: bool, judged: int, score: float, score_marginal: float, score_pass: float) -> Standing:
    """The standing of a stage with `judged` judged pairs and the analysis' `score`: a fired
    measure first, then nothing judged (a default score judged nothing), then the score's bands."""
    if fired:
        return Standing.FIRED
    if judged == 0:
        return Standing.NOT_JUDGED
    if score < score_marginal:
        return Standing.BELOW_MARGINAL
    return Standing.MARGINAL if score < score_pass else Standing.CLEAN
