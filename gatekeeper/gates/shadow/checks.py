"""Gate 5's checks and findings that other code reads (the correctness table, the Markdown
summary): which checks are rules and stages, and a stage's overall disagreement, typed. A
literal `shadow.…` id outside this package is a test failure (tests/repo/test_contracts.py).

Each rollback rule is a check `shadow.rule.<name>`, each canary stage `shadow.stage.<name>`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gatekeeper.results import CheckResult

GATE = "shadow"
RULE_PREFIX = f"{GATE}.rule."
STAGE_PREFIX = f"{GATE}.stage."
NEAR_MISS = f"{GATE}.near_miss"
"""An advisory WARN: sequential tests that passed close to firing (near_miss.py)."""


def rule(name: str) -> str:
    """The check id of a rollback rule."""
    return RULE_PREFIX + name


def stage(name: str) -> str:
    """The check id of a canary stage."""
    return STAGE_PREFIX + name


def is_rule(check: CheckResult) -> bool:
    """A rollback rule's check."""
    return check.id.startswith(RULE_PREFIX)


def is_stage(check: CheckResult) -> bool:
    """A canary stage's check."""
    return check.id.startswith(STAGE_PREFIX)


@dataclass(frozen=True)
class DisagreementFinding:
    """Over all of a stage's traffic: the share of answers that differ from the reference's
    beyond a near tie, for the candidate and for the reference's own second run (its twin)."""

    candidate_rate: float | None
    twin_rate: float | None

    @staticmethod
    def of(stage_check: CheckResult) -> DisagreementFinding | None:
        """The finding of a stage check that judged pairs (None when it has no slices)."""
        slices: list[dict[str, Any]] = stage_check.metrics.get("slices") or []
        everything = next((s for s in slices if s.get("slice") == "all"), None)
        measure = next((m for m in everything["metrics"] if m["name"] == "disagreement"), None) if everything else None
        if measure is None:
            return None
        return DisagreementFinding(measure.get("candidate_rate"), measure.get("twin_rate"))
