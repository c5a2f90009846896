"""`gatekeeper selftest`: run every cell of the built-in fault matrix as its own `gatekeeper run`
subprocess and judge the gates by what they caught.

Per fault cell the outcome is one of: caught at an intended gate; caught earlier (a gate before
the intended ones stopped the run — still a catch, named); caught elsewhere (a later or
unexpected gate); missed (PROMOTE); not judged (HOLD: the run could not decide — never counted as
a catch). A clean cell that does not PROMOTE is a false alarm (ROLLBACK) or inconclusive (HOLD).
The catching gate is the earliest gate, by stage, with a blocking FAIL.

The judgement is a `SelftestResult` (report/selftest/data.py), written to OUT as `selftest.json`
and `selftest.html` (the fault × gate detection matrix, rendered by report/selftest/view.py)
through the report package's writer (report/writer.py); each cell's run goes under
`OUT/<cell>/<run-id>/`. A cell whose run directory already holds a summary from the same
arguments is kept (resumable).

Each run's summary.json is read by `gatekeeper.run_summary`. A run that left no summary that reads
(no run directory, no file, corrupt, no verdict: a `SummaryError`) decided nothing: its fault cell
is "not judged" and its clean cell "inconclusive", the progress line says why, and the cell's
`verdict` field holds HOLD as report/selftest/data.py documents for a run without a summary.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import yaml

from gatekeeper.atomic import write_atomic
from gatekeeper.config.run_config import find_file
from gatekeeper.gates.registry import select
from gatekeeper.report.selftest.data import CellOutcome, SelftestResult
from gatekeeper.report.selftest.view import selftest_html
from gatekeeper.report.writer import write_pages
from gatekeeper.results import Status, Verdict
from gatekeeper.run_summary import SUMMARY_FILE, RunSummary, SummaryError, SummaryMissing, read_summary
from gatekeeper.selftest.cells import SelftestCell, cells, uncovered

GATE_ORDER = tuple(g.id for g in select(None))  # stage order, from the one list of gates
ARGS_FILE = "selftest-args.json"


def _outcome(cell: SelftestCell, verdict: Verdict | None, caught_at: str | None) -> str:
    """The cell's outcome from its run's verdict (None: the run left no summary that reads) and the
    gate that caught its fault."""
    if cell.clean:
        return "clean" if verdict is Verdict.PROMOTE else "false alarm" if verdict is Verdict.ROLLBACK else "inconclusive"
    if verdict is None or verdict is Verdict.HOLD:
        return "not judged"
    if caught_at is None:
        return "missed"
    if caught_at in cell.catch_at:
        return "caught at an intended gate"
    first = min(GATE_ORDER.index(g) for g in cell.catch_at)
    return "caught earlier" if GATE_ORDER.index(caught_at) < first else "caught elsewhere"


def _summary(run_dir: Path | None) -> RunSummary | SummaryError:
    """The cell run's summary, or why it has none (no run directory is a missing summary)."""
    if run_dir is None:
        return SummaryMissing(Path(SUMMARY_FILE), "the run left no run directory")
    try:
        return read_summary(run_dir)
    except SummaryError as e:
        return e


def _judge(cell: SelftestCell, run_dir: Path | None, seconds: float, kept: bool) -> tuple[CellOutcome, SummaryError | None]:
    """The cell's outcome, and the reason its run has no summary (None when it has one)."""
    summary = _summary(run_dir)
    if isinstance(summary, SummaryError):
        return CellOutcome(cell=cell.id, faults=tuple(cell.faults), intended=tuple(cell.catch_at), verdict=Verdict.HOLD,
                           caught_at=None, failing=(), outcome=_outcome(cell, None, None), seconds=round(seconds, 1),
                           run_dir=str(run_dir or ""), kept=kept), summary
    failing = []
    caught_at = None
    for gate in sorted(summary.gates, key=lambda g: GATE_ORDER.index(g.id) if g.id in GATE_ORDER else 99):
        fails = [c.id for c in gate.checks if c.status is Status.FAIL and c.blocking]
        if fails and caught_at is None:
            caught_at = gate.id
        failing += fails
    if kept:  # a kept cell's time is its own run's, not this invocation's
        seconds = _run_seconds(summary)
    return CellOutcome(cell=cell.id, faults=tuple(cell.faults), intended=tuple(cell.catch_at), verdict=summary.verdict,
                       caught_at=caught_at, failing=tuple(failing[:8]), outcome=_outcome(cell, summary.verdict, caught_at),
                       seconds=round(seconds, 1), run_dir=str(run_dir or ""), kept=kept), None


def _run_seconds(summary: RunSummary) -> float:
    """A run's wall time from its summary's start and finish stamps (0 when they do not parse)."""
    import datetime as dt

    try:
        return (dt.datetime.fromisoformat(summary.finished_at) - dt.datetime.fromisoformat(summary.started_at)).total_seconds()
    except ValueError:
        return 0.0


def _policy(cell: SelftestCell, quick: bool, cell_dir: Path) -> str | None:
    """For a cell with explained path changes, a copy of its shipped policy that lists them
    (written into the cell's directory); None: the shipped policy as it is."""
    if not cell.explained:
        return None
    data = yaml.safe_load(find_file(cell.base_policy(quick)).read_text())
    startup = data.setdefault("gates", {}).setdefault("startup", {})
    startup["explained_path_changes"] = [{"line": regex, "reason": "selftest: explained, so the later gates judge it"}
                                         for regex in cell.explained]
    path = cell_dir / "policy.yaml"
    write_atomic(path, yaml.safe_dump(data, sort_keys=False))
    return str(path)


def _kept(cell_dir: Path, args: list[str]) -> Path | None:
    for run_dir in sorted((p for p in cell_dir.glob("*") if p.is_dir()), reverse=True):
        try:
            same = json.loads((run_dir / ARGS_FILE).read_text()) == args
        except (OSError, json.JSONDecodeError):
            continue
        if same and isinstance(_summary(run_dir), RunSummary):
            return run_dir
    return None


def run_selftest(out: Path, quick: bool, extra: Sequence[str], progress: Callable[[str], None]) -> SelftestResult:
    """Run the cells; returns (and writes) the selftest's result."""
    chosen = cells(quick)
    results: list[CellOutcome] = []
    started = time.perf_counter()
    for i, cell in enumerate(chosen, 1):
        cell_dir = out / cell.id
        cell_dir.mkdir(parents=True, exist_ok=True)
        args = [*cell.args(quick, _policy(cell, quick, cell_dir)), *extra]
        kept = _kept(cell_dir, args)
        if kept is not None:
            results.append(_judge(cell, kept, 0.0, True)[0])
            progress(f"[{i}/{len(chosen)}] {cell.id}: kept ({results[-1].outcome})")
            continue
        progress(f"[{i}/{len(chosen)}] {cell.id}: running")
        before = {p for p in cell_dir.iterdir() if p.is_dir()}
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "gatekeeper.cli", "run", "--out", str(cell_dir), *args],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        new = sorted(p for p in cell_dir.iterdir() if p.is_dir() and p not in before)
        run_dir = new[-1] if new else None
        if run_dir is not None:
            write_atomic(run_dir / ARGS_FILE, json.dumps(args))
        r, no_summary = _judge(cell, run_dir, time.perf_counter() - t0, False)
        results.append(r)
        said = f"no verdict ({no_summary})" if no_summary else r.verdict.value
        progress(f"[{i}/{len(chosen)}] {cell.id}: {said}, {r.outcome}" + (f" ({r.caught_at})" if r.caught_at else "")
                 + f" in {r.seconds:.0f} s")
    result = _result(results, quick, time.perf_counter() - started)
    write_pages(out, [("selftest.json", json.dumps(result.to_json(), indent=2) + "\n"),
                      ("selftest.html", selftest_html(result, GATE_ORDER))])
    return result


def _result(results: list[CellOutcome], quick: bool, seconds: float) -> SelftestResult:
    """The cells' outcomes tallied; `seconds` is this invocation's wall time."""
    faulty = [r for r in results if r.faults]
    clean = [r for r in results if not r.faults]
    caught = [r for r in faulty if r.outcome.startswith("caught")]
    return SelftestResult(
        quick=quick, wall_s=round(seconds, 1), cells_s=round(sum(r.seconds for r in results), 1),
        faults=len(faulty), caught=len(caught),
        caught_at_intended_gate=sum(1 for r in faulty if r.outcome == "caught at an intended gate"),
        missed=tuple(r.cell for r in faulty if r.outcome == "missed"),
        not_judged=tuple(r.cell for r in results if r.outcome in ("not judged", "inconclusive")),
        clean_cells=len(clean), false_alarms=tuple(r.cell for r in clean if r.outcome == "false alarm"),
        not_covered=tuple(uncovered()), ok=all(r.outcome in ("caught at an intended gate", "clean") for r in results),
        cells=tuple(results))
