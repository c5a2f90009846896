"""`gatekeeper golden`: golden-set tools."""

from __future__ import annotations


import click

from gatekeeper import exit_codes
from gatekeeper.cli_exit import fail
from gatekeeper.errors import GatekeeperError


@click.group()
def golden() -> None:
    """Golden-set tools."""


@golden.command("record")
@click.option("--target", required=True, help="Target whose answers become the baseline (bundled[:...] or a URL).")
@click.option("--golden", "golden_path", default="golden_sets/core.yaml", show_default=True, help="Golden set YAML.")
@click.option("--out", "out_path", required=True, help="Baseline JSONL to write, e.g. golden_sets/baselines/NAME.jsonl.")
@click.option("--model", default=None, help="Checkpoint for a bundled target.")
def golden_record(target: str, golden_path: str, out_path: str, model: str | None) -> None:
    """Snapshot a target's answers to the golden set, so later runs compare without it running."""
    from gatekeeper.errors import ConfigError
    from gatekeeper.commands.golden_record import record_target

    try:
        n = record_target(target, golden_path, out_path, model)
    except ConfigError:
        raise
    except GatekeeperError as e:  # the target could not start or answer: there is nothing to record
        fail(str(e), exit_codes.STARTUP_FAILURE, e.hint)
    click.echo(f"recorded {n} answers to {out_path}", err=True)
