"""Expectations: the verdict a matrix expects of its cells, by cell and by the run's faults.

    expect:
      - {faults: [fused-norm-dtype], when: {dtype: bfloat16, tp: 2, fused_norm: on}, verdict: ROLLBACK}
      - {faults: [fused-norm-dtype], verdict: PROMOTE}
      - {faults: [], verdict: PROMOTE}

Rules are tried in order and the first that applies gives the cell's expected verdict (a cell
no rule covers has none). A rule applies to a cell its `when` selector matches (no `when`: every
cell) in a run whose candidate faults are exactly `faults` by name (`decode-slowdown=5` is
`decode-slowdown`; `[]` is a run without faults; no `faults`: any run).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from gatekeeper.matrix.selector import Selector

VERDICTS = ("PROMOTE", "HOLD", "ROLLBACK")


def fault_names(faults: Iterable[str]) -> frozenset[str]:
    """The faults' names without their values."""
    return frozenset(str(f).partition("=")[0].strip() for f in faults)


@dataclass(frozen=True)
class Expectation:
    """One rule: the verdict, the cells it covers, the faults it is for (None: any)."""

    verdict: str
    when: Selector = Selector()
    faults: frozenset[str] | None = None
    line: int | None = None

    def applies(self, cell: Mapping[str, str], faults: Iterable[str]) -> bool:
        """Whether this rule covers a cell (axis -> rendered value) in a run with these faults."""
        return self.when.matches(cell) and (self.faults is None or self.faults == fault_names(faults))


def expected(rules: Iterable[Expectation], cell: Mapping[str, str], faults: Iterable[str]) -> str | None:
    """The first applying rule's verdict, else None."""
    faults = list(faults)
    return next((r.verdict for r in rules if r.applies(cell, faults)), None)
