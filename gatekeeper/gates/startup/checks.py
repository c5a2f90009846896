"""Gate 1's checks that other code reads (gate 5's rules, the correctness table, matrix path
records, bisect): their ids, in one place. Renaming one here renames it everywhere; a literal
`startup.…` id outside this package is a test failure (tests/repo/test_contracts.py)."""

from __future__ import annotations

GATE = "startup"


def ready(role: str) -> str:
    """`startup.ready.<role>`: the target became ready (or did not: FAIL / the reference's ERROR)."""
    return f"{GATE}.ready.{role}"


def canary(role: str) -> str:
    """`startup.canary.<role>`: the target answered the deterministic canary as expected."""
    return f"{GATE}.canary.{role}"


READY_REFERENCE = ready("reference")
READY_CANDIDATE = ready("candidate")
CANARY_CANDIDATE = canary("candidate")
CAPABILITIES = f"{GATE}.capabilities"  # the candidate supports every feature the reference does
EXECUTION_PATH = f"{GATE}.execution_path"  # what each target states it runs agrees with what it is judged by
PATH_CHANGE = f"{GATE}.path_change"  # an execution-path change the policy does not explain
LOG_RULES = f"{GATE}.log_rules"  # candidate log lines matching a policy rule
NEW_WARNINGS = f"{GATE}.new_warnings"  # warning lines the reference's log does not print
