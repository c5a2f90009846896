"""The report data of `gatekeeper selftest`: what each cell's run showed, and the tally.

selftest/run.py runs the cells and judges each (`CellOutcome`: caught at an intended gate,
caught earlier or elsewhere, missed, not judged; for a clean cell clean, false alarm or
inconclusive), then tallies them into a `SelftestResult`. That value is written as
selftest.json (`SelftestResult.to_json`, format gatekeeper.selftest/1) and rendered as
selftest.html (view.py).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from gatekeeper.json_types import JsonObject
from gatekeeper.results import Verdict

SELFTEST_FORMAT = "gatekeeper.selftest/1"


@dataclass(frozen=True, kw_only=True)
class CellOutcome:
    """What one cell's run showed."""

    cell: str
    faults: tuple[str, ...]  # the faults switched on; () for a clean cell
    intended: tuple[str, ...]  # the gates meant to catch them
    verdict: Verdict  # the run's verdict; HOLD when it left no summary
    caught_at: str | None  # the earliest gate, by stage, with a blocking FAIL
    failing: tuple[str, ...]  # the blocking FAILs' check ids (the first few)
    outcome: str  # "caught at an intended gate", "missed", "clean", "false alarm", …
    seconds: float  # the cell's own run's wall time
    run_dir: str  # "" when the run left no directory
    kept: bool = False  # an earlier invocation's run, kept (resumed) rather than run again


@dataclass(frozen=True, kw_only=True)
class SelftestResult:
    """The selftest's tally over its cells."""

    quick: bool
    wall_s: float  # this invocation's wall time
    cells_s: float  # every cell's own run, kept ones included
    faults: int  # fault cells
    caught: int  # fault cells caught at any gate
    caught_at_intended_gate: int
    missed: tuple[str, ...]  # fault cells that PROMOTEd
    not_judged: tuple[str, ...]  # cells whose run could not decide (HOLD)
    clean_cells: int
    false_alarms: tuple[str, ...]  # clean cells that ROLLBACKed
    not_covered: tuple[str, ...]  # faults no cell switches on
    ok: bool  # every fault caught at an intended gate and every clean cell promoted
    cells: tuple[CellOutcome, ...]

    def to_json(self) -> JsonObject:
        """selftest.json's content."""
        return {"format": SELFTEST_FORMAT, "quick": self.quick, "wall_s": self.wall_s, "cells_s": self.cells_s,
                "faults": self.faults, "caught": self.caught, "caught_at_intended_gate": self.caught_at_intended_gate,
                "missed": list(self.missed), "not_judged": list(self.not_judged), "clean_cells": self.clean_cells,
                "false_alarms": list(self.false_alarms), "not_covered": list(self.not_covered), "ok": self.ok,
                "cells": [{**asdict(r), "verdict": r.verdict.value} for r in self.cells]}
