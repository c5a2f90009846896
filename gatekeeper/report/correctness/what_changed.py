"""What changed between the two builds, as the run saw it, for the top of the reports.

Two things a release engineer asks first, before any gate's finding: does the candidate state
another execution path (the identity's path keys that differ, and those only one side states),
and does its log print warnings the reference's does not (gate 1's `new_warnings` check, whose
evidence holds the normalised lines)? Both are facts gate 1 gathered; this module only collects
them, so correctness.html and summary.md show them near the verdict, not at the page's end.
When the candidate's log could not be read (a URL target without `log_file`), that is said, not
shown as "no new warnings".
"""

from __future__ import annotations

from dataclasses import dataclass

from gatekeeper.evidence import Log
from gatekeeper.gates.startup.checks import GATE as STARTUP, NEW_WARNINGS, NewWarningsFinding
from gatekeeper.report.identity import identify
from gatekeeper.results import RunResult, Status

MAX_WARNINGS = 5  # the first lines shown; the check's evidence holds up to 50


@dataclass(frozen=True)
class WhatChanged:
    """The stated path's differences and the candidate's new log warnings."""

    path: tuple[str, ...]  # "engine_version 0.31.0 → 0.32.0", one per differing key
    only: tuple[str, ...]  # "only the candidate states attention_backend"
    warnings: tuple[str, ...]  # the first MAX_WARNINGS new warning lines (normalised)
    more_warnings: int  # how many more the check found
    warnings_check: str  # the check's id ("" when gate 1 did not check the logs)
    warnings_note: str  # why the logs were not compared ("" when they were)

    @property
    def lines(self) -> tuple[str, ...]:
        """The block as plain lines: the path first, then the warnings (or why none were looked for)."""
        out = [f"stated path: {', '.join(self.path)}" if self.path else "stated path: no difference where both state it"]
        out += [f"stated path: {o}" for o in self.only]
        if self.warnings_note:
            out.append(f"new log warnings: not checked ({self.warnings_note})")
        elif not self.warnings:
            out.append("new log warnings: none (every warning line the candidate printed, the reference printed too)")
        else:
            more = f" (and {self.more_warnings} more)" if self.more_warnings else ""
            out.append(f"new log warnings: {len(self.warnings) + self.more_warnings} line(s) the reference did not print{more}:")
            out += [f"  {w}" for w in self.warnings]
        return tuple(out)


def what_changed(run: RunResult) -> WhatChanged | None:
    """The block for `run`, or None when it has not both targets (nothing to compare)."""
    who = identify(run.targets)
    if who is None:
        return None
    check = next((c for g in run.gates for c in g.checks if c.id == NEW_WARNINGS), None)
    if check is None:
        lines: list[str] = []
        note = "gate 1 did not run" if not any(g.checks for g in run.gates if g.id == STARTUP) else "gate 1 did not compare the logs"
    elif check.status == Status.SKIP:
        lines, note = [], check.reason
    else:
        log = next((e for e in check.evidence if isinstance(e, Log)), None)
        lines, note = list(log.lines) if log is not None else [], ""
    counted = NewWarningsFinding.of(check).new_warnings if check is not None and not note else None
    total = len(lines) if counted is None else counted
    return WhatChanged(tuple(f"{k} {a} → {b}" for k, a, b in who.differs),
                       tuple(f"only the {role} states {', '.join(keys)}" for role, keys in
                             (("reference", who.only_reference), ("candidate", who.only_candidate)) if keys),
                       tuple(lines[:MAX_WARNINGS]), max(0, int(total) - min(len(lines), MAX_WARNINGS)),
                       check.id if check is not None else "", note)
