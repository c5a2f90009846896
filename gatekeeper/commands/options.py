"""The run options' flags, made from `config/option_table.py` (`gatekeeper run`, `matrix run` and
`perf calibrate` take them), and small helpers of the commands."""

from __future__ import annotations

from collections.abc import Callable, Collection
from pathlib import Path
from typing import TypeVar

import click

from gatekeeper.config.option_table import OPTIONS, Option

Command = TypeVar("Command", bound=Callable[..., None])


CONFIG = click.option("-c", "--config", "config_path", type=click.Path(), default=None,
                      help="Run-config YAML (layer 2 of 4).")
ONE_CELL = ("matrix", "cell")  # `gatekeeper run`'s own: `matrix run` runs every cell


def flag_of(option: Option) -> Callable[[Command], Command]:
    """The click option of a run option, made from its table entry: values stay strings (or
    tuples of them) for `resolve` to parse, so a bad one is reported as a file or a variable is."""
    if option.repeatable:
        return click.option(option.flag_name, option.name, multiple=True, metavar=option.metavar,
                            help=option.full_flag_help)
    return click.option(option.flag_name, option.name, default=None, metavar=option.metavar, help=option.full_flag_help)


def table_options(names: Collection[str]) -> Callable[[Command], Command]:
    """A decorator adding the flags of the run options `names`, in the table's order."""
    def add(command: Command) -> Command:
        for option in reversed([o for o in OPTIONS if o.name in names]):
            command = flag_of(option)(command)
        return command
    return add


def run_options(command: Command) -> Command:
    """-c and the layered run options (targets, policy, gates, faults, ...), shared by
    `gatekeeper run` and `gatekeeper matrix run`, whose cells get them."""
    return CONFIG(table_options([o.name for o in OPTIONS if o.name not in ONE_CELL])(command))


def discard(run_dir: Path) -> None:
    """Remove what a run that never started left in its directory: a dry run's scratch
    directory, or a cell's merged policy written before the plan failed."""
    import shutil

    from gatekeeper.matrix.cell_run import POLICY_FILE

    if run_dir.is_dir() and {p.name for p in run_dir.iterdir()} <= {POLICY_FILE}:
        shutil.rmtree(run_dir)


def argv_of(ctx: click.Context, skip: set[str]) -> list[str]:
    """The options a command was given, as command-line arguments again (to pass them on)."""
    argv: list[str] = []
    for param in ctx.command.params:
        value = ctx.params.get(param.name or "")
        if not isinstance(param, click.Option) or param.name in skip or value in (None, (), False):
            continue
        flag = max(param.opts, key=len)
        if param.is_flag:
            argv.append(flag)
            continue
        for item in value if param.multiple else (value,):
            argv += [flag, str(item)]
    return argv
