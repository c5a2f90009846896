"""Gate 4's checks and findings that other code reads (the correctness table, matrix path
records): ids and the needle grid's counts, typed. A literal `longctx.…` id outside this package
is a test failure (tests/repo/test_architecture.py)."""

from __future__ import annotations

from dataclasses import dataclass

from gatekeeper.results import CheckResult

GATE = "longctx"
NEEDLE_GRID = f"{GATE}.needle_grid"
JSON_SCHEMA = f"{GATE}.json_schema"
TOOL_CALLS = f"{GATE}.tool_calls"
TOOL_STREAM = f"{GATE}.tool_stream"
TOOL_RESULT = f"{GATE}.tool_result"
JSON_CHECKS = (JSON_SCHEMA,)
"""The checks that judge JSON output (what a path record calls its JSON probe)."""
TOOL_CHECKS = (TOOL_CALLS, TOOL_STREAM, TOOL_RESULT)
"""The checks that judge tool calling."""


@dataclass(frozen=True)
class NeedleGridFinding:
    """The needle grid's counts: cells in the length × depth grid, the cells each side recalled,
    and the cells judged (the rest: both fail, or the reference is unstable)."""

    cells: int
    reference_pass: int
    candidate_pass: int
    judged: int

    @staticmethod
    def of(check: CheckResult) -> NeedleGridFinding:
        """The counts of a `longctx.needle_grid` check (0 where the check has none)."""
        m = check.metrics
        return NeedleGridFinding(*(int(m.get(k) or 0) for k in ("cells", "reference_pass", "candidate_pass", "judged")))
