"""Progress on stderr: rich styling on a terminal, plain timestamped lines in CI."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from rich.console import Console

from gatekeeper.redact import NONE, Redactor
from gatekeeper.report.run.data import limits_text
from gatekeeper.report.run.registry import listed_filenames
from gatekeeper.report.statuses import coverage_text
from gatekeeper.report.identity import identify
from gatekeeper.results import GateResult, RunResult, Status, Verdict

_STYLE = {Verdict.PROMOTE: "bold green", Verdict.HOLD: "bold yellow", Verdict.ROLLBACK: "bold red"}


class Progress:
    """Callable that prints one progress line; `summary` prints the verdict block."""

    def __init__(self, redactor: Redactor = NONE) -> None:
        self.redact = redactor.text
        self.tty = sys.stderr.isatty()
        self.console = Console(stderr=True, highlight=False, soft_wrap=True)  # rich follows the terminal, NO_COLOR, FORCE_COLOR
        self.t0 = time.perf_counter()

    def __call__(self, message: str) -> None:
        message = self.redact(message)
        elapsed = time.perf_counter() - self.t0
        if self.tty:
            self.console.print(f"[dim]{elapsed:6.1f}s[/dim] {message}", markup=True)
        else:
            print(f"[gatekeeper {elapsed:6.1f}s] {message}", file=sys.stderr, flush=True)

    def summary(self, result: RunResult, run_dir: Path) -> None:
        """Who was compared, the results table (a row per gate), the verdict, its reasons and where
        the reports are."""
        who = identify(result.targets)
        if who is not None:
            self.console.print(f"compared: {self.redact(who.line)}", markup=False)
        self.console.print("\n".join(results_table(result.gates)), markup=False)
        style = _STYLE[result.verdict]
        self.console.print(f"verdict: [{style}]{result.headline}[/{style}] (exit {result.exit_code})", markup=True)
        for reason in result.reasons[:10]:
            self.console.print(f"  - {self.redact(reason)}", markup=False)
        if len(result.reasons) > 10:
            self.console.print(f"  … and {len(result.reasons) - 10} more", markup=False)
        limits = limits_text(result)
        if limits:
            self.console.print("what the blocking PASSes would have caught (the weakest first):", markup=False)
            for line in limits:
                self.console.print(f"  - {line}", markup=False)
        reused = [g.id for g in result.gates if g.reused]
        if result.rejudged_from:
            self.console.print(f"re-judged the answers run {result.rejudged_from} recorded; no server was asked"
                               + (f"; carried over as measured: {', '.join(reused)}" if reused else ""), markup=False)
        elif result.redone:
            self.console.print(f"redone: {', '.join(result.redone)} asked again on fresh targets; kept from the earlier "
                               f"run: {', '.join(reused) or 'nothing'}", markup=False)
        elif reused:
            ran = [g.id for g in result.gates if not g.reused]
            self.console.print(f"resumed: {len(reused)} gate(s) from the interrupted run ({', '.join(reused)}); "
                               f"{len(ran)} ran now ({', '.join(ran)})", markup=False)
        if result.reference_cache is not None:
            self.console.print(result.reference_cache.line, markup=False)
        self.console.print(f"reports: {run_dir}/ ({', '.join(listed_filenames())})", markup=False)


def results_table(gates: tuple[GateResult, ...]) -> list[str]:
    """A plain-text row per gate: its status, how much it judged, its checks by status (undecided
    apart from the other WARNs) and its time; a gate the run left out says why."""
    head = (f"{'gate':<22} {'status':<7} {'judged':<26} {'pass':>4} {'warn':>4} {'undec':>5} {'fail':>4} {'skip':>4} "
            f"{'error':>5} {'time':>7}")
    rows = [head, "-" * len(head)]
    for g in gates:
        name = f"{g.stage} {g.id}"
        if g.excluded is not None:
            rows.append(f"{name:<22} {'-':<7} not run: {g.excluded}")
            continue
        n = {s: sum(1 for c in g.checks if c.status == s and not c.undecided) for s in Status}
        undecided = sum(1 for c in g.checks if c.undecided)
        rows.append(f"{name:<22} {g.status.value:<7} {coverage_text(g.coverage):<26} {n[Status.PASS]:>4} {n[Status.WARN]:>4} "
                    f"{undecided:>5} {n[Status.FAIL]:>4} {n[Status.SKIP]:>4} {n[Status.ERROR]:>5} {g.duration_s:>6.1f}s")
    return rows
