"""selftest.html: the fault × gate detection matrix, rendered from templates/selftest.html.j2.

One row per cell: its faults, a mark per gate (● the gate that caught the fault — the first
blocking FAIL; ○ an intended gate that did not get to it or did not catch it), the verdict, the
outcome in its colour and the time. Above the table, the tally in one sentence. `selftest_page`
makes the display values so the template only loops; the report package's Jinja2 environment
(report/html.py) autoescapes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gatekeeper.report.html import render_page
from gatekeeper.report.selftest.data import CellOutcome, SelftestResult

_COLOUR = {"caught at an intended gate": "#1a7f37", "clean": "#1a7f37", "caught earlier": "#9a6700",
           "caught elsewhere": "#9a6700", "missed": "#cf222e", "false alarm": "#cf222e", "not judged": "#6e7781",
           "inconclusive": "#6e7781"}
_TEXT_COLOUR = "#24292f"


@dataclass(frozen=True)
class SelftestRow:
    """One cell's row."""

    cell: str
    faults: str  # comma-separated; "—" for a clean cell
    marks: tuple[str, ...]  # one per gate: "●", "○" or ""
    verdict: str
    outcome: str
    colour: str  # the outcome's colour
    time: str  # e.g. "12 s (kept)"


@dataclass(frozen=True, kw_only=True)
class SelftestPage:
    """selftest.html's values, in reading order."""

    quick: bool
    ok: bool
    summary: str  # the tally in one sentence
    wall: str  # seconds
    cells: str  # seconds of the cells' own runs
    gates: tuple[str, ...]
    rows: tuple[SelftestRow, ...]
    not_covered: str


def _mark(c: CellOutcome, gate: str) -> str:
    """● where the fault was caught, ○ at an intended gate that did not catch it."""
    return "●" if c.caught_at == gate else "○" if gate in c.intended else ""


def selftest_page(r: SelftestResult, gates: Sequence[str]) -> SelftestPage:
    """The page's display values; `gates` are the table's gate columns, in stage order."""
    rows = tuple(SelftestRow(c.cell, ", ".join(c.faults) or "—", tuple(_mark(c, g) for g in gates), c.verdict.value,
                             c.outcome, _COLOUR.get(c.outcome, _TEXT_COLOUR), f"{c.seconds:.0f} s{' (kept)' if c.kept else ''}")
                 for c in r.cells)
    summary = (f"{r.caught} of {r.faults} faults caught, {r.caught_at_intended_gate} at an intended gate; "
               f"missed: {', '.join(r.missed) or 'none'}; false alarms: {len(r.false_alarms)} of "
               f"{r.clean_cells} clean cells; not judged: {', '.join(r.not_judged) or 'none'}")
    return SelftestPage(quick=r.quick, ok=r.ok, summary=summary, wall=f"{r.wall_s:.0f}", cells=f"{r.cells_s:.0f}",
                        gates=tuple(gates), rows=rows, not_covered=", ".join(r.not_covered) or "none")


def selftest_html(r: SelftestResult, gates: Sequence[str]) -> str:
    """selftest.html's text."""
    # Jinja drops a template's final newline; the page has always ended with one.
    return render_page("selftest.html.j2", page=selftest_page(r, gates)) + "\n"
