"""The report data of a merged matrix: each cell's run as the merge read it, and the judgement.

`gatekeeper report merge` (matrix/merge.py) loads the cells' run directories, judges them, and
hands a `MergedMatrix` to the renderers: merged.json (`MergedMatrix.to_json`, format
gatekeeper.merged/1), summary.md (markdown.py), junit.xml (junit.py) and merged.html
(view.py), all written by files.py. The renderers only format these values; the verdict, its
reasons and the localisation sentence are decided before they get here.
Verdicts are `Verdict` values here; the renderers write their text.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gatekeeper.json_types import JsonObject
from gatekeeper import exit_codes
from gatekeeper.results import Verdict

MERGED_FORMAT = "gatekeeper.merged/1"


@dataclass(frozen=True)
class MatrixCheck:
    """One check of a cell's run, as its summary.json recorded it."""

    id: str
    status: str  # PASS / WARN / FAIL / SKIP / ERROR
    blocking: bool
    reason: str
    duration_s: float = 0.0


@dataclass(frozen=True, kw_only=True)
class MatrixCell:
    """One cell's run as the merge sees it."""

    cell: str  # the cell's id, e.g. "dtype=bfloat16,tp=2"
    axes: dict[str, Any]  # axis → value
    expected: Verdict | None  # the verdict the matrix says the cell must reach; None: nothing expected
    run_dir: Path
    verdict: Verdict  # HOLD when the run left no summary
    gates: dict[str, str]  # gate id → status
    failing: tuple[str, ...]  # "check: STATUS — reason" of blocking FAILs and ERRORs
    checks: tuple[MatrixCheck, ...]
    record: JsonObject  # the execution-path record (docs/bug-classes.md#path-record) (matrix/record.py)
    matrix: str = ""  # the matrix's name
    note: str = ""  # why the cell holds without a summary; "" when it has one

    @property
    def met(self) -> bool | None:
        """Whether the verdict is the expected one (None: nothing expected)."""
        return None if self.expected is None else self.verdict is self.expected

    @property
    def expectation(self) -> str:
        """The expected verdict with ✓ (met) or ✗ (missed), e.g. "ROLLBACK ✓"; "—" when nothing was expected."""
        return f"{self.expected.value if self.expected else '—'}{'' if self.met is None else (' ✓' if self.met else ' ✗')}"

    @property
    def record_yaml(self) -> str:
        """The execution-path record as YAML (records/<cell>.yaml, and on the page)."""
        return yaml.safe_dump(self.record, sort_keys=False, allow_unicode=True)


@dataclass(frozen=True)
class MergedMatrix:
    """The merged judgement of one matrix's cells: what every merged report shows."""

    matrix: str
    verdict: Verdict  # the worst cell's, or HOLD when a cell missed its expectation
    reasons: tuple[str, ...]
    localisation: str  # one sentence: the smallest condition on the axes that separates the failing cells
    cells: tuple[MatrixCell, ...]

    @property
    def exit_code(self) -> int:
        """The merged verdict's process exit code."""
        return exit_codes.FOR_VERDICT[self.verdict.value]

    @property
    def axes(self) -> list[str]:
        """Every axis, in the order the cells first name them."""
        return list(dict.fromkeys(a for c in self.cells for a in c.axes))

    @property
    def gate_ids(self) -> list[str]:
        """Every gate any cell ran, in the order the cells first name them."""
        return list(dict.fromkeys(g for c in self.cells for g in c.gates))

    def to_json(self) -> JsonObject:
        """merged.json's content."""
        return {"format": MERGED_FORMAT, "matrix": self.matrix, "verdict": self.verdict.value, "exit_code": self.exit_code,
                "reasons": list(self.reasons), "localisation": self.localisation,
                "cells": [{"cell": c.cell, "axes": c.axes, "verdict": c.verdict.value,
                           "expected": c.expected.value if c.expected else None, "met": c.met,
                           "gates": c.gates, "failing": list(c.failing), "run_dir": str(c.run_dir), "note": c.note,
                           "record": c.record} for c in self.cells]}
