"""`gatekeeper run`: the gates on a candidate beside a reference, and the verdict's exit code."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from gatekeeper import exit_codes
from gatekeeper.cli_exit import crashed, fail, json_errors
from gatekeeper.commands.options import ONE_CELL, discard, run_options, table_options
from gatekeeper.errors import GatekeeperError


@click.command()
@run_options
@table_options(ONE_CELL)
@click.option("--dry-run", is_flag=True, help="Print the resolved plan (targets, policy, gates, golden cases) and exit "
              "(3 when a URL target does not answer or refuses its key).")
@click.option("--json", "as_json", is_flag=True, help="Print summary.json to stdout.")
@click.option("--resume", "resume_dir", default=None, metavar="RUN_DIR",
              help="Continue the interrupted run in RUN_DIR (it has incomplete.json): give the same options; its "
                   "finished gates are reused, the rest run again, one report is written.")
@click.option("--redo", "redo", default=None, metavar="GATE[,GATE]",
              help="With --resume: ask these gates again on fresh targets (gate 1 always runs), keeping every other "
                   "gate's records; a finished run may be resumed so. summary.json names the gates redone.")
def run(config_path: str | None, as_json: bool, dry_run: bool, resume_dir: str | None, redo: str | None,
        **flags) -> None:
    """Run the gates on a candidate beside a reference and decide PROMOTE / HOLD / ROLLBACK.

    Options come from built-in defaults, then the run config (-c), then GATEKEEPER_<OPTION>
    environment variables, then these flags. With --matrix and --cell, the cell's candidate,
    declared path and policy fragments go on top, and cell.json marks the run directory as the
    cell's (docs/matrices.md). Exit codes: 0 PROMOTE, 1 ROLLBACK, 2 HOLD, 3 usage or
    configuration error (with --dry-run also a URL target that does not answer or refuses its key).
    """
    import os
    import tempfile
    from dataclasses import replace

    from gatekeeper.config.run_config import resolve
    from gatekeeper.errors import ConfigError
    from gatekeeper.run.plan import build_plan, new_run_id
    from gatekeeper.commands.progress import Progress
    from gatekeeper.run.runner import Runner

    from gatekeeper.run.run_dir import check_resumable, fingerprint

    if as_json:
        json_errors()
    if resume_dir and dry_run:
        fail("--resume and --dry-run do not go together", exit_codes.USAGE)
    if redo is not None and not resume_dir:
        fail("--redo needs --resume RUN_DIR: the run whose gates to ask again", exit_codes.USAGE)
    run_id = Path(resume_dir).name if resume_dir else new_run_id()
    run_dir: Path | None = None
    cell_run = None
    resumable = None
    try:
        options, sources = resolve(config_path, os.environ, flags)
        if resume_dir:
            options = replace(options, out=str(Path(resume_dir).parent))
        run_dir = Path(tempfile.mkdtemp(prefix="gatekeeper-dry-run-")) if dry_run else Path(options.out) / run_id
        if options.matrix or options.cell:
            from gatekeeper.matrix.cell_run import apply_cell

            options, sources, cell_run = apply_cell(options, sources, run_dir)  # may write the cell's policy there
        plan = build_plan(options, sources, run_id)
        parts = None if dry_run else fingerprint(plan)  # hashing the model and code: not for a dry run
        if resume_dir:
            assert parts is not None  # --resume and --dry-run were refused together above
            resumable = check_resumable(Path(resume_dir), parts, redo_gates(redo))
    except ConfigError as e:
        if run_dir is not None and not resume_dir:
            discard(run_dir)
        fail(str(e), exit_codes.USAGE, e.hint)
    if dry_run:
        from gatekeeper.run.plan import describe_plan
        from gatekeeper.run.plan_warnings import plan_warnings

        if cell_run is not None:
            click.echo(f"matrix {cell_run.matrix.path} cell {cell_run.cell.id} (expected: {cell_run.expected or 'nothing'})")
        found = plan_warnings(plan)  # asks each URL target for its models
        click.echo(plan.redactor().text(describe_plan(plan, found.lines)))
        discard(run_dir)
        if found.unusable:
            fail(plan.redactor().text("; ".join(found.unusable)), exit_codes.USAGE,
                 "no run could use it: start the server, correct the URL or name the variable holding its key")
        sys.exit(exit_codes.OK)
    progress = Progress(plan.redactor())
    if cell_run is not None:
        cell_run.write(run_dir, run_id)
        progress(f"matrix {cell_run.matrix.name} cell {cell_run.cell.id}"
                 + (f" (expected {cell_run.expected})" if cell_run.expected else ""))
    try:
        result = Runner(plan, progress, parts, resumable).run()
    except GatekeeperError as e:
        fail(str(e), exit_codes.HOLD, "no verdict: the run could not finish")
    except Exception as e:  # noqa: BLE001 — gatekeeper's own failure: exit INTERNAL_ERROR, the run dir stays incomplete
        crashed(e, plan.redactor())
    progress.summary(result, plan.out_dir / plan.run_id)
    if cell_run is not None:
        from gatekeeper.matrix.record import write_record

        write_record(plan.out_dir / plan.run_id)  # docs/bug-classes.md#path-record: the path this cell ran
    if as_json:
        from gatekeeper.report.run.summary_json import SummaryJsonRenderer

        click.echo((plan.out_dir / plan.run_id / SummaryJsonRenderer.filename).read_text())  # redacted when written
    sys.exit(result.exit_code)


def redo_gates(redo: str | None) -> tuple[str, ...]:
    """The gate ids --redo names, checked against the registry (ConfigError naming an unknown one)."""
    if redo is None:
        return ()
    from gatekeeper.gates.registry import select

    names = tuple(n.strip() for n in redo.split(",") if n.strip())
    if not names:
        from gatekeeper.errors import ConfigError

        raise ConfigError("names no gate (--redo GATE[,GATE])", key="--redo")
    select(list(names))  # unknown ids: exit 3 naming them
    return names

