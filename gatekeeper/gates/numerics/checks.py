"""Gate 2's checks and findings that other code reads (gate 5's `logit_drift` rule, the
correctness table): ids and the drift figures of a check, typed. A literal `numerics.…` id
outside this package is a test failure (tests/repo/test_contracts.py)."""

from __future__ import annotations

from dataclasses import dataclass

from gatekeeper.results import CheckResult

GATE = "numerics"
COVERAGE = f"{GATE}.coverage"
SCORING = f"{GATE}.scoring"  # could the targets be scored teacher-forced at all
TOKENIZATION = f"{GATE}.tokenization"  # do both tokenize the prompts alike
NAN_INF = f"{GATE}.nan_inf"
NLL_DRIFT = f"{GATE}.nll_drift"
JUDGEABILITY = (COVERAGE, SCORING, TOKENIZATION)
"""The checks that say what gate 2 could judge: not drift figures."""


def is_drift(check: CheckResult) -> bool:
    """A drift figure (or NaN/Inf): one of gate 2's checks other than what it could judge."""
    return check.id not in JUDGEABILITY


@dataclass(frozen=True)
class DriftFinding:
    """A drift check's figures: the candidate's value, the limit it is judged by and the
    reference's own noise floor on the same prompts (None where a figure is absent)."""

    value: float | None
    limit: float | None
    noise_floor: float | None

    @staticmethod
    def of(check: CheckResult) -> DriftFinding:
        """The figures of a drift check (`nll_drift`, `kl`, ...)."""
        def num(key: str) -> float | None:
            x = check.metrics.get(key)
            return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None
        return DriftFinding(num("value"), num("limit"), num("noise_floor"))
