"""`gatekeeper selftest`: the bundled faults through the gates, the detection matrix."""

from __future__ import annotations

import sys
from pathlib import Path

import click



@click.command()
@click.option("--quick", is_flag=True, help="The subset that runs in about a minute (smoke policy, the gates each cell needs).")
@click.option("--out", "out_path", default="reports/selftest", show_default=True, help="Where the cells' runs and the report go.")
@click.option("--model", default=None, help="Checkpoint for the bundled targets [the shipped gk-tiny].")
def selftest(quick: bool, out_path: str, model: str | None) -> None:
    """Run the bundled engine's faults (each with its trigger) and clean cells through the gates:
    the detection matrix (fault × gate), catches at the intended gate, misses, false alarms on
    the clean cells (selftest.html, selftest.json). Resumable. Exit 0 when every fault was caught
    at an intended gate and every clean cell promoted, else 1."""
    from gatekeeper.commands.progress import Progress
    from gatekeeper.selftest.run import run_selftest

    r = run_selftest(Path(out_path), quick, ["--model", model] if model else [], Progress())
    click.echo(f"selftest{' (quick)' if quick else ''}: {r.caught}/{r.faults} faults caught, "
               f"{r.caught_at_intended_gate} at an intended gate; missed: {', '.join(r.missed) or 'none'}; "
               f"false alarms: {len(r.false_alarms)}/{r.clean_cells} clean cells; "
               f"not covered: {', '.join(r.not_covered) or 'none'}; {r.wall_s:.0f} s "
               f"({r.cells_s:.0f} s of cell runs, kept ones included)")
    click.echo(f"report: {out_path}/selftest.html")
    sys.exit(0 if r.ok else 1)
