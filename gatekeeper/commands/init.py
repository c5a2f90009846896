"""`gatekeeper init`: a run config, a policy and a CI workflow for gating one URL against another.

Everything comes from the flags; only the two URLs, when missing on a terminal, are asked for.
Nothing is overwritten without `--force`, and nothing is half-written: every file is checked
first (the URLs parse as targets, the written run config and policy load as `gatekeeper run`
loads them) and each is written atomically. Exit 0 done, 3 a usage error.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from gatekeeper import exit_codes
from gatekeeper.errors import ConfigError

DTYPES = ("fp32", "bf16", "fp16")


@click.command()
@click.option("--reference", default=None, metavar="URL", help="The reference server's base URL (asked for on a terminal).")
@click.option("--candidate", default=None, metavar="URL", help="The candidate server's base URL (asked for on a terminal).")
@click.option("--dtype", type=click.Choice(DTYPES), default=None, help="The dtype both serve (sets both declared dtypes).")
@click.option("--reference-dtype", type=click.Choice(DTYPES), default=None, help="The reference's dtype.")
@click.option("--candidate-dtype", type=click.Choice(DTYPES), default=None, help="The candidate's dtype.")
@click.option("--served-model", default=None, help="The served model id. [the first /v1/models lists]")
@click.option("--no-keys", is_flag=True, help="The servers take no API key (no file written names a key variable, secret or key flag).")
@click.option("--dir", "directory", type=click.Path(file_okay=False), default=".", show_default=True,
              help="The project directory the files go to (run gatekeeper from there).")
@click.option("--force", is_flag=True, help="Overwrite files that exist.")
def init(reference: str | None, candidate: str | None, dtype: str | None, reference_dtype: str | None,
         candidate_dtype: str | None, served_model: str | None, no_keys: bool, directory: str, force: bool) -> None:
    """Write gatekeeper.yaml, gatekeeper-policy.yaml and .github/workflows/gatekeeper.yml for two URLs."""
    from gatekeeper.cli_exit import fail
    from gatekeeper.commands.init_files import InitAnswers, init_files
    from gatekeeper.atomic import write_atomic

    answers = InitAnswers(_url("reference", reference), _url("candidate", candidate), reference_dtype or dtype,
                          candidate_dtype or dtype, served_model, keys=not no_keys)
    root = Path(directory)
    files = init_files(answers)
    there = [name for name in files if (root / name).exists()]
    if there and not force:
        fail(f"{', '.join(str(root / n) for n in there)} already exist(s); --force overwrites", exit_codes.USAGE)
    try:
        _check(files)
    except ConfigError as e:
        fail(str(e), exit_codes.USAGE, e.hint)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        write_atomic(root / name, text)
        click.echo(f"wrote {root / name}")
    from gatekeeper.commands.init_files import WORKFLOW

    click.echo(f"next: pin the gatekeeper the workflow installs: INSTALL_GATEKEEPER at the top of {root / WORKFLOW} "
               "(a release tag of gatekeeper's repository, or a wheel kept in yours)")
    if no_keys:
        click.echo("next: check the plan here: `gatekeeper run -c gatekeeper.yaml --dry-run`")
    else:
        click.echo("next: in the repository settings, set the secrets GATEKEEPER_REFERENCE_API_KEY and "
                   "GATEKEEPER_CANDIDATE_API_KEY if the servers want keys; then check the plan here: "
                   "`REFERENCE_API_KEY=... CANDIDATE_API_KEY=... gatekeeper run -c gatekeeper.yaml --dry-run`")


def _url(role: str, given: str | None) -> str:
    """The URL from the flag, else asked for on a terminal; a usage error when neither."""
    from gatekeeper.cli_exit import fail
    from gatekeeper.targets.spec import parse_target

    if given is None:
        if not sys.stdin.isatty():
            fail(f"--{role} URL is required (no terminal to ask on)", exit_codes.USAGE)
        given = click.prompt(f"{role} URL (e.g. http://vllm-{role[:3]}:8000)")
    try:
        spec = parse_target(given, role)
    except ConfigError as e:
        fail(f"--{role}: {e.message}", exit_codes.USAGE)
    if spec.kind != "url":
        fail(f"--{role}: {given!r} is not an http(s) URL (init writes a config for two servers)", exit_codes.USAGE)
    return given


def _check(files: dict[str, str]) -> None:
    """The run config and the policy load as a run would load them (ConfigError if not)."""
    import tempfile

    from gatekeeper.config.policy import load_policy
    from gatekeeper.config.run_config import resolve
    from gatekeeper.gates.registry import settings_types
    from gatekeeper.commands.init_files import POLICY, RUN_CONFIG

    with tempfile.TemporaryDirectory(prefix="gatekeeper-init-") as scratch:
        for name in (RUN_CONFIG, POLICY):
            (Path(scratch) / name).write_text(files[name], encoding="utf-8")
        resolve(str(Path(scratch) / RUN_CONFIG), {}, {})
        load_policy(Path(scratch) / POLICY, settings_types())
