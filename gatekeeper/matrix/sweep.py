"""`gatekeeper matrix run`: every cell of a matrix on this machine, one after another, each as
its own `gatekeeper run` subprocess (so one cell's crash cannot take the others with it).

Cells run under OUT/<matrix name>/<cell id>/<run-id>/. The sweep is resumable: a cell with a
finished run (a summary.json that reads, `gatekeeper.run_summary`) whose cell.json has the same matrix hash and the
same run options hash is kept, not run again. Each cell's console output is kept as
`gatekeeper.log` in its run directory.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gatekeeper import exit_codes
from gatekeeper.matrix.cell import Cell
from gatekeeper.matrix.cell_run import read_record
from gatekeeper.matrix.spec import Matrix
from gatekeeper.results import Verdict
from gatekeeper.run_summary import SummaryError, read_summary

LOG_FILE = "gatekeeper.log"
_SEVERITY = (exit_codes.USAGE, exit_codes.ROLLBACK, exit_codes.HOLD, exit_codes.PROMOTE)  # worst first


@dataclass(frozen=True, kw_only=True)
class CellOutcome:
    """What one cell came to: its verdict (None: the run gave none), what was expected of it,
    whether a finished run was kept, its run directory, the run's exit code and, for a run that
    gave no verdict, the last line it printed."""

    cell: Cell
    verdict: Verdict | None
    expected: str | None
    kept: bool
    run_dir: Path | None
    exit_code: int
    seconds: float = 0.0
    error: str | None = None

    @property
    def matched(self) -> bool | None:
        """Whether the verdict is the expected one (None: nothing was expected)."""
        return None if self.expected is None else (self.verdict.value if self.verdict else None) == self.expected

    @property
    def code(self) -> int:
        """This cell's share of the sweep's exit code: a configuration error is USAGE; with an
        expectation, 0 if met and ROLLBACK's 1 if not; without, the verdict's own code."""
        if self.exit_code == exit_codes.USAGE:
            return exit_codes.USAGE
        if self.expected is not None:
            return exit_codes.OK if self.matched else exit_codes.ROLLBACK
        return exit_codes.FOR_VERDICT[self.verdict.value] if self.verdict else exit_codes.HOLD


def finished_verdict(run_dir: Path) -> Verdict | None:
    """The verdict of a finished run (summary.json is written last, atomically); None for a run
    that left no summary that reads (a `SummaryError`: it died, was cut short, or its file states
    no verdict): the sweep runs such a cell again, or reports that its run gave no verdict."""
    try:
        return read_summary(run_dir).verdict
    except SummaryError:
        return None


def kept_run(cell_dir: Path, matrix: Matrix, cell: Cell, options_sha256: str) -> tuple[Path, Verdict] | None:
    """The newest finished run of this cell with the same matrix and options, and its verdict."""
    if not cell_dir.is_dir():
        return None
    for run_dir in sorted((d for d in cell_dir.iterdir() if d.is_dir()), reverse=True):  # run ids sort by time
        record = read_record(run_dir)
        if (record is None or record.get("cell") != cell.id or record.get("options_sha256") != options_sha256
                or (record.get("matrix") or {}).get("sha256") != matrix.sha256):
            continue
        verdict = finished_verdict(run_dir)
        if verdict is not None:
            return run_dir, verdict
    return None


def run_cells(matrix: Matrix, matrix_arg: str, root: Path, run_args: list[str], options_sha256: str,
              faults: list[str], progress: Callable[[str], None]) -> list[CellOutcome]:
    """Run (or keep) every cell in order; `run_args` are the `gatekeeper run` flags every cell gets."""
    outcomes = []
    total = len(matrix.cells)
    for n, cell in enumerate(matrix.cells, 1):
        expected = matrix.expected(cell, faults)
        cell_dir = root / cell.id
        kept = kept_run(cell_dir, matrix, cell, options_sha256)
        if kept is not None:
            run_dir, verdict = kept
            outcome = CellOutcome(cell=cell, verdict=verdict, expected=expected, kept=True, run_dir=run_dir,
                                  exit_code=exit_codes.FOR_VERDICT[verdict.value])
            progress(f"[{n}/{total}] {cell.id}: kept {verdict.value} from {run_dir}")
        else:
            progress(f"[{n}/{total}] {cell.id}: running" + (f" (expected {expected})" if expected else ""))
            outcome = _run_one(matrix_arg, cell, expected, cell_dir, run_args)
            said = outcome.verdict.value if outcome.verdict else f"no verdict (exit {outcome.exit_code}: {outcome.error})"
            progress(f"[{n}/{total}] {cell.id}: {said} in {outcome.seconds:.0f} s"
                     + (f" — {outcome.run_dir}" if outcome.run_dir else ""))
        outcomes.append(outcome)
    return outcomes


def _run_one(matrix_arg: str, cell: Cell, expected: str | None, cell_dir: Path, run_args: list[str]) -> CellOutcome:
    """One `gatekeeper run --matrix M --cell ID` subprocess, its output to a log file."""
    cell_dir.mkdir(parents=True, exist_ok=True)
    before = {d for d in cell_dir.iterdir() if d.is_dir()}
    argv = [sys.executable, "-m", "gatekeeper.cli", "run", "--matrix", matrix_arg, "--cell", cell.id, "--out", str(cell_dir),
            *run_args]
    log_path = cell_dir / LOG_FILE
    t0 = time.perf_counter()
    with open(log_path, "wb") as log:
        # A session of its own: a terminal's Ctrl-C reaches only this process, which passes on
        # exactly one interrupt (a second one could cut the run's own clean-up short).
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            code = proc.wait()
        except KeyboardInterrupt:
            _let_it_stop(proc)
            raise
    seconds = time.perf_counter() - t0
    new = sorted(d for d in cell_dir.iterdir() if d.is_dir() and d not in before)
    run_dir = new[-1] if new else None
    if run_dir is not None:
        os.replace(log_path, run_dir / LOG_FILE)
        log_path = run_dir / LOG_FILE
    verdict = finished_verdict(run_dir) if run_dir is not None else None
    error = None
    if verdict is None:
        lines = [ln for ln in log_path.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
        error = (lines[-1].strip() if lines else "no output") + f" (log: {log_path})"
    return CellOutcome(cell=cell, verdict=verdict, expected=expected, kept=False, run_dir=run_dir, exit_code=code,
                       seconds=seconds, error=error)


def _let_it_stop(proc: subprocess.Popen) -> None:
    """On Ctrl-C, pass one interrupt to the cell's run and give it time to stop its engines (they
    run in sessions of their own, so only the run can stop them); kill it if it lingers."""
    for nudge, wait_s in ((signal.SIGINT, 60), (signal.SIGKILL, 10)):
        proc.send_signal(nudge)
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def exit_code(outcomes: list[CellOutcome]) -> int:
    """The sweep's exit code: the worst cell's share (see CellOutcome.code), in the order
    configuration error, ROLLBACK (or an expectation missed), HOLD, PROMOTE."""
    codes = {o.code for o in outcomes}
    return next((c for c in _SEVERITY if c in codes), exit_codes.OK)


def table(outcomes: list[CellOutcome]) -> str:
    """One line per cell: id, verdict, expected, match, and where its run is."""
    rows = [("cell", "verdict", "expected", "match", "run")]
    for o in outcomes:
        match = "—" if o.matched is None else "yes" if o.matched else "NO"
        where = f"{'kept ' if o.kept else ''}{o.run_dir}" if o.run_dir else (o.error or "")
        rows.append((o.cell.id, o.verdict.value if o.verdict else "none", o.expected or "—", match, where))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return "\n".join("  ".join(r[i].ljust(widths[i]) for i in range(4)) + "  " + r[4] for r in rows)
