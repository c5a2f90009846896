"""`gatekeeper compare RUN_A RUN_B`: what changed from one finished run to another (gatekeeper/compare/).

Exit codes: 0 no check got worse, 1 some check got worse (gatekeeper/compare/diff.py says which
changes count), 3 bad input (a missing or unfinished run directory, an unreadable summary.json:
one line naming it).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from gatekeeper import exit_codes
from gatekeeper.cli_exit import json_errors
from gatekeeper.errors import ConfigError

NOTHING_WORSE = exit_codes.OK
SOMETHING_WORSE = exit_codes.ROLLBACK  # 1, as a run's regression


@click.command()
@click.argument("run_a", type=click.Path(path_type=Path))
@click.argument("run_b", type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Also write compare.html, compare.md and compare.json into this directory (made if missing).")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON (format gatekeeper.compare/1) "
              "instead of the console lines.")
def compare(run_a: Path, run_b: Path, out: Path | None, as_json: bool) -> None:
    """Compare two finished runs (their directories, e.g. reports/<run-id>): the checks that
    changed status, those only one run has, the new findings in B, the metrics that moved, and
    whether both ran the same plan. Exit 1 when some check got worse from A to B."""
    from gatekeeper.compare.diff import compare_runs
    from gatekeeper.compare.load import load_run
    from gatekeeper.compare.render import console_lines, write

    if as_json:
        json_errors()
    comparison = compare_runs(load_run(run_a, "A"), load_run(run_b, "B"))
    if as_json:
        from gatekeeper.compare.json_form import to_text

        click.echo(to_text(comparison), nl=False)
    else:
        for line in console_lines(comparison):
            click.echo(line)
    if out is not None:
        try:
            out.mkdir(parents=True, exist_ok=True)
            paths = write(comparison, out)
        except OSError as e:
            raise ConfigError(f"cannot write the comparison: {e}", key="--out") from None
        for p in paths:
            click.echo(f"  {p}", err=as_json)
    sys.exit(SOMETHING_WORSE if comparison.worse else NOTHING_WORSE)
