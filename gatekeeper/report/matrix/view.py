"""merged.html: a merged matrix as one self-contained page, rendered from templates/matrix.html.j2.

`matrix_page` turns the `MergedMatrix` into display values (every axis value a string, each
verdict and gate status a `Badge` with its colour, the expectation with ✓ / ✗, each cell's
record as YAML), so the template only loops; the report package's Jinja2 environment
(report/html.py) autoescapes it, so a cell, axis value or reason holding markup shows as text. The
page reads: the verdict, the localisation and the reasons, the cells × gates table, the first
failing checks of each cell, then every cell's execution-path record.
"""

from __future__ import annotations

from dataclasses import dataclass

from gatekeeper.report.html import render_page
from gatekeeper.report.matrix.data import MergedMatrix

MAX_FAILING_PER_CELL = 5
_COLOUR = {"PROMOTE": "#1a7f37", "HOLD": "#9a6700", "ROLLBACK": "#cf222e", "PASS": "#1a7f37", "WARN": "#9a6700",
           "FAIL": "#cf222e", "ERROR": "#cf222e", "SKIP": "#6e7781"}
_TEXT_COLOUR = "#24292f"  # a status the page has no colour for ("—": the cell did not run the gate)


@dataclass(frozen=True)
class Badge:
    """A verdict or status in its colour."""

    text: str
    colour: str


def badge(status: str) -> Badge:
    """`status` with the colour the page shows it in."""
    return Badge(status, _COLOUR.get(status, _TEXT_COLOUR))


@dataclass(frozen=True)
class MatrixRow:
    """One cell's row of the cells × gates table."""

    cell: str
    axes: tuple[str, ...]  # one value per column of `MatrixPage.axes` ("" where the cell has no such axis)
    verdict: Badge
    expected: str  # e.g. "ROLLBACK ✓"; "—" when nothing was expected
    gates: tuple[Badge, ...]  # one per column of `MatrixPage.gates` ("—" where the cell did not run it)


@dataclass(frozen=True, kw_only=True)
class MatrixPage:
    """merged.html's values, in reading order."""

    matrix: str
    verdict: Badge
    localisation: str
    reasons: tuple[str, ...]
    axes: tuple[str, ...]
    gates: tuple[str, ...]
    rows: tuple[MatrixRow, ...]
    failing: tuple[tuple[str, str], ...]  # (cell, "check: STATUS — reason"), the first few per cell
    records: tuple[tuple[str, str, str], ...]  # (cell, verdict, execution-path record as YAML)


def matrix_page(m: MergedMatrix) -> MatrixPage:
    """The page's display values."""
    axes, gates = m.axes, m.gate_ids
    rows = tuple(MatrixRow(c.cell, tuple(str(c.axes.get(a, "")) for a in axes), badge(c.verdict.value),
                           c.expectation, tuple(badge(c.gates.get(g, "—")) for g in gates))
                 for c in m.cells)
    return MatrixPage(matrix=m.matrix, verdict=badge(m.verdict.value), localisation=m.localisation, reasons=m.reasons,
                      axes=tuple(axes), gates=tuple(gates), rows=rows,
                      failing=tuple((c.cell, f) for c in m.cells for f in c.failing[:MAX_FAILING_PER_CELL]),
                      records=tuple((c.cell, c.verdict.value, c.record_yaml) for c in m.cells))


def matrix_html(m: MergedMatrix) -> str:
    """merged.html's text."""
    # Jinja drops a template's final newline; the page has always ended with one.
    return render_page("matrix.html.j2", page=matrix_page(m)) + "\n"
