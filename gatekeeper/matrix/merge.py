"""`gatekeeper report merge DIR…`: cell runs of one matrix merged into one judgement.

Each DIR is a cell's run directory (its `cell.json` and `summary.json`) or a directory holding
such run directories at any depth (a CI job's downloaded artifacts). Per cell: its axis values,
verdict, per-gate status, the failing checks and the path record (docs/bug-classes.md#path-record).
Across cells: the localisation (`localise.py`: the smallest condition on the axes that separates
failing cells from passing ones), whether each cell met its expected verdict, and the overall verdict under
the combining rule — the worst cell's verdict (a ROLLBACK anywhere rolls back; a cell that could
not be judged, or whose run left no summary it can read, HOLDs), and with expectations given, a cell that
does not meet its expectation HOLDs the merge (the matrix did not behave as it says it must).

A cell's summary.json is read by `gatekeeper.run_summary` (schema-checked): a cell whose run left
none, or one that does not read as a summary (corrupt, no verdict, another format), HOLDs with a
note naming why (`SummaryError`); its gates and checks are then unknown, not guessed.

This module reads and judges; the report package renders: the judgement is a `MergedMatrix`
(report/matrix/data.py), written to OUT by `report.matrix.files.write_merged` as `merged.json`,
`summary.md` (a PR comment / job summary), `junit.xml` (one <testsuite> per cell, one <testcase>
per check), `merged.html` (one self-contained page) and each cell's record as
`records/<cell>.yaml`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from gatekeeper.errors import ConfigError
from gatekeeper.matrix.localise import Localisation, localise
from gatekeeper.matrix.record import path_record
from gatekeeper.report.matrix.data import MatrixCell, MatrixCheck, MergedMatrix
from gatekeeper.report.matrix.files import write_merged
from gatekeeper.results import Status, Verdict
from gatekeeper.run_summary import SummaryError, SummaryMissing, read_summary

CELL_FILE = "cell.json"


def find_cell_dirs(paths: Iterable[Path]) -> list[Path]:
    """Run directories holding a cell.json under `paths` (each a run directory or a tree of them)."""
    found: list[Path] = []
    for p in paths:
        if not p.exists():
            raise ConfigError(f"{p}: no such directory")
        found += sorted({f.parent for f in ([p / CELL_FILE] if (p / CELL_FILE).is_file() else p.rglob(CELL_FILE))})
    return list(dict.fromkeys(found))


def load_cell(run_dir: Path) -> MatrixCell:
    """A cell's result from its run directory."""
    try:
        meta = json.loads((run_dir / CELL_FILE).read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise ConfigError(f"{run_dir / CELL_FILE}: cannot read it: {e}") from None
    cell, axes, expected = str(meta.get("cell")), dict(meta.get("axes") or {}), _expected(run_dir, meta.get("expected"))
    matrix = str((meta.get("matrix") or {}).get("name") or "")
    try:
        summary = read_summary(run_dir)
    except SummaryError as e:
        return MatrixCell(cell=cell, axes=axes, expected=expected, run_dir=run_dir, verdict=Verdict.HOLD, gates={}, failing=(),
                          checks=(), record={}, matrix=matrix, note=_no_summary(e))
    gates = {g.id: g.status.value for g in summary.gates}
    checks = tuple(MatrixCheck(c.id, c.status.value, c.blocking, c.reason, c.duration_s) for c in summary.checks)
    failing = tuple(f"{c.id}: {c.status.value} — {c.reason[:200]}" for c in summary.checks
                    if c.status is Status.ERROR or (c.status is Status.FAIL and c.blocking))
    return MatrixCell(cell=cell, axes=axes, expected=expected, run_dir=run_dir, verdict=summary.verdict, gates=gates,
                      failing=failing, checks=checks, record=path_record(summary, meta), matrix=matrix)


def _expected(run_dir: Path, said: object) -> Verdict | None:
    """The verdict cell.json says the cell must reach (None: nothing expected)."""
    if said is None:
        return None
    try:
        return Verdict(said)
    except ValueError:
        raise ConfigError(f"{run_dir / CELL_FILE}: expected {said!r} is not a verdict",
                          hint=f"one of {', '.join(v.value for v in Verdict)}") from None


def _no_summary(e: SummaryError) -> str:
    """Why a cell without a readable summary HOLDs, for its note."""
    why = "it died or was cut short" if isinstance(e, SummaryMissing) else e.why
    return f"the run left no readable summary.json ({why}): HOLD"


def combined(cells: Sequence[MatrixCell]) -> tuple[Verdict, list[str]]:
    """The merged verdict and why."""
    if not cells:
        return Verdict.HOLD, ["no cell run found"]
    why = []
    verdict = max((c.verdict for c in cells), key=lambda v: v.severity)
    if verdict is not Verdict.PROMOTE:
        bad = [c.cell for c in cells if c.verdict is verdict]
        why.append(f"{len(bad)} cell(s) {verdict.value}: {', '.join(bad)}")
    missed = [c for c in cells if c.met is False]
    if missed:
        why.append("not as expected: " + ", ".join(f"{c.cell} {c.verdict.value} (expected {c.expected.value if c.expected else '—'})"
                                                   for c in missed))
        if verdict is Verdict.PROMOTE:
            verdict = Verdict.HOLD
    return verdict, why


def _localisation(cells: Sequence[MatrixCell]) -> Localisation:
    axes = list(dict.fromkeys(a for c in cells for a in c.axes))
    failed = {c.cell: {Verdict.ROLLBACK: True, Verdict.PROMOTE: False}.get(c.verdict) for c in cells}
    return localise({c.cell: c.axes for c in cells}, failed, axes)


def merge(paths: Sequence[Path], out: Path) -> tuple[Verdict, Path]:
    """Merge the cell runs under `paths` into `out`; returns (verdict, out)."""
    cells = [load_cell(d) for d in find_cell_dirs(paths)]
    if not cells:
        raise ConfigError(f"no cell runs (run directories with {CELL_FILE}) under {', '.join(map(str, paths))}")
    names = sorted({c.matrix for c in cells})
    if len(names) > 1:
        raise ConfigError(f"the cell runs come from different matrices ({', '.join(names)}): merge one matrix at a time")
    dupes = sorted({c.cell for c in cells if sum(1 for d in cells if d.cell == c.cell) > 1})
    if dupes:
        raise ConfigError(f"cell(s) run more than once: {', '.join(dupes)} (pass one run directory per cell)")
    verdict, why = combined(cells)
    write_merged(MergedMatrix(names[0], verdict, tuple(why), _localisation(cells).sentence(), tuple(cells)), out)
    return verdict, out
