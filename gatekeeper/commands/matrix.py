"""`gatekeeper matrix` and `gatekeeper report merge`: execution-path matrices and their merged report."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from gatekeeper.commands.options import argv_of, run_options


@click.group()
def matrix() -> None:
    """Execution-path matrices: plan a matrix's cells as CI jobs, or run them all here (docs/matrices.md)."""


@matrix.command("plan")
@click.argument("path")
@click.option("--format", "fmt", type=click.Choice(["json", "github", "gitlab"]), default="json", show_default=True,
              help="json: every cell with its `gatekeeper run` arguments; github: strategy.matrix JSON (one line); "
              "gitlab: parallel:matrix YAML.")
@click.option("--candidate-fault", "faults", multiple=True, metavar="NAME[=V]",
              help="A fault the cells will run with (repeatable): the expected verdicts are for these, and each cell's "
              "arguments carry them (json).")
def matrix_plan(path: str, fmt: str, faults: tuple[str, ...]) -> None:
    """Print a matrix's cells as a job matrix for a CI system (the data to stdout)."""
    from gatekeeper.matrix.job_matrix import render_plan
    from gatekeeper.matrix.spec import load_matrix

    click.echo(render_plan(load_matrix(path), path, fmt, faults))


@matrix.command("run")
@click.argument("path")
@run_options
def matrix_run(path: str, config_path: str | None, **flags) -> None:
    """Run every cell of a matrix on this machine, one `gatekeeper run` subprocess after another.

    The run options (all of `gatekeeper run`'s) go to every cell; cells land in
    OUT/<matrix name>/<cell id>/<run-id>/. Resumable: a cell with a finished run of the same matrix
    file and options is kept. Prints a table of cells with their verdicts and expectations. Exit
    code: 0 when every cell met its expectation; a cell without one counts with its verdict's code
    (0 PROMOTE, 1 ROLLBACK, 2 HOLD); a missed expectation counts as 1; 3 a configuration error.
    """
    import os
    import tempfile
    from dataclasses import replace

    from gatekeeper.config.run_config import resolve
    from gatekeeper.matrix.cell_run import apply_cell, options_sha256
    from gatekeeper.matrix.spec import load_matrix
    from gatekeeper.matrix.sweep import exit_code, run_cells, table
    from gatekeeper.commands.progress import Progress

    ctx = click.get_current_context()
    options, sources = resolve(config_path, os.environ, flags)
    if options.report_url:
        from gatekeeper.cli_exit import fail
        from gatekeeper.exit_codes import USAGE

        fail("--report-url names one run directory's URL, and a matrix run writes one per cell", USAGE,
             "give it to each cell's `gatekeeper run --cell`, as a CI job per cell does")
    m = load_matrix(path)
    with tempfile.TemporaryDirectory(prefix="gatekeeper-matrix-") as scratch:  # every cell's options, checked first
        for cell in m.cells:
            apply_cell(replace(options, matrix=path, cell=cell.id), sources, Path(scratch) / "cell")
    root = Path(options.out) / m.name
    run_args = argv_of(ctx, skip={"path", "out"})
    progress = Progress()
    progress(f"matrix {m.name}: {len(m.cells)} cells from {path}, under {root}/")
    outcomes = run_cells(m, path, root, run_args, options_sha256(options), list(options.candidate_faults), progress)
    click.echo(table(outcomes))
    kept = sum(o.kept for o in outcomes)
    missed = sum(o.matched is False for o in outcomes)
    progress(f"matrix {m.name}: {len(outcomes)} cells ({kept} kept, {len(outcomes) - kept} run)"
             + (f"; {missed} missed their expectation" if missed else ""))
    sys.exit(exit_code(outcomes))


@click.group()
def report() -> None:
    """Report tools."""


@report.command("merge")
@click.argument("dirs", nargs=-1, required=True)
@click.option("--out", "out_path", default="merged", show_default=True, help="Directory the merged report goes to.")
def report_merge(dirs: tuple[str, ...], out_path: str) -> None:
    """Merge a matrix's cell runs (run directories with cell.json, or trees of them, e.g. CI
    artifacts) into one report: cells × gates, the failing path localised, execution-path records,
    merged.json, summary.md, junit.xml (one suite per cell), merged.html. Exit code: the merged
    verdict's (0 PROMOTE, 1 ROLLBACK, 2 HOLD)."""
    from gatekeeper.exit_codes import FOR_VERDICT
    from gatekeeper.matrix.merge import merge

    verdict, out = merge([Path(d) for d in dirs], Path(out_path))
    data = json.loads((out / "merged.json").read_text())
    for cell in data["cells"]:
        expected = "" if cell["expected"] is None else f"  expected {cell['expected']}{' ✓' if cell['met'] else ' ✗'}"
        click.echo(f"  {cell['verdict']:<8} {cell['cell']}{expected}")
    click.echo(f"localisation: {data['localisation']}")
    code = FOR_VERDICT[verdict.value]
    click.echo(f"verdict: {verdict.value} (exit {code}); report: {out}/ (merged.html, merged.json, summary.md, junit.xml)")
    sys.exit(code)
