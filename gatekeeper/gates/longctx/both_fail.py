"""Gate 4's both-fail rule (Diffy's: the reference's own behaviour is the baseline).

A tool, JSON or tool-result case that neither target gets right is still compared: the
candidate's answer against the reference's, with the reference asked twice (the noise-floor
pass) to see whether its answer repeats. Answered the same → the case does not suit the model
(not judged, WARN); answered differently where the reference repeats itself → a regression
(judged, FAIL) unless the divergence is a near tie (not judged); where the reference changes its own answer,
or its second pass was off or failed → not judged, with that reason.
"""

from __future__ import annotations

from enum import Enum
from typing import Any


class Outcome(str, Enum):
    """How a both-fail case compares."""

    SAME = "both fail identically"
    NEAR_TIE = "both fail, differ at a near tie"
    SAME_TOKENS = "both fail with the same tokens, rendered differently"
    DIFFERS = "differs from the reference's repeatable answer"
    UNSTABLE = "reference unstable"
    UNMEASURED = "no noise floor"


def compare(candidate: Any, reference: Any, reference_again: Any | None) -> Outcome:
    """Compare answer keys (equal when the answers are the same in substance); `reference_again`
    is the key of the reference's second answer, None when there is none."""
    if candidate == reference:
        return Outcome.SAME
    if reference_again is None:
        return Outcome.UNMEASURED
    return Outcome.DIFFERS if reference_again == reference else Outcome.UNSTABLE
