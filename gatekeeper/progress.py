"""Progress on stderr: rich styling on a terminal, plain timestamped lines in CI."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from rich.console import Console

from gatekeeper.redact import NONE, Redactor
from gatekeeper.report.registry import listed_filenames
from gatekeeper.results import RunResult, Verdict

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
        """The verdict, its reasons and where the reports are."""
        style = _STYLE[result.verdict]
        self.console.print(f"verdict: [{style}]{result.headline}[/{style}] (exit {result.exit_code})", markup=True)
        for reason in result.reasons[:10]:
            self.console.print(f"  - {self.redact(reason)}", markup=False)
        if len(result.reasons) > 10:
            self.console.print(f"  … and {len(result.reasons) - 10} more", markup=False)
        reused = [g.id for g in result.gates if g.reused]
        if reused:
            ran = [g.id for g in result.gates if not g.reused]
            self.console.print(f"resumed: {len(reused)} gate(s) from the interrupted run ({', '.join(reused)}); "
                               f"{len(ran)} ran now ({', '.join(ran)})", markup=False)
        self.console.print(f"reports: {run_dir}/ ({', '.join(listed_filenames())})", markup=False)
