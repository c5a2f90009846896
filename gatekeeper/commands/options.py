"""The options `gatekeeper run` and `gatekeeper matrix run` share, and small helpers of the commands."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
import click


def env_help(option: str, text: str) -> str:
    """An option's help with the environment variable that sets it."""
    from gatekeeper.config.run_config import BY_NAME

    return f"{text} [env: {BY_NAME[option].env}]"


RUN_OPTIONS = [
    click.option("-c", "--config", "config_path", type=click.Path(), default=None, help="Run-config YAML (layer 2 of 4)."),
    click.option("--reference", default=None,
                  help=env_help("reference", "Reference target: bundled[:reference|optimized] or a URL. [bundled:reference]")),
    click.option("--candidate", default=None, help=env_help("candidate", "Candidate target (same forms). [bundled:optimized]")),
    click.option("--model", default=None, help=env_help("model", "The model: a checkpoint directory for bundled targets [the shipped "
                  "gk-tiny], else the served model id URL/launch targets are asked for.")),
    click.option("--served-model", default=None, help=env_help("served_model", "Served model id for URL and launch targets. "
                  "[the first /v1/models lists]")),
    click.option("--policy", default=None, help=env_help("policy", "Gate policy YAML. [gates/default.yaml]")),
    click.option("--golden", multiple=True, help=env_help("golden", "Golden set YAML (repeatable). [golden_sets/core.yaml]")),
    click.option("--gates", default=None,
                 help=env_help("gates", "Comma-separated gates to run, e.g. startup,numerics,golden. [all enabled]")),
    click.option("--cases", "cases", multiple=True, metavar="GLOB",
                 help=env_help("cases", "Golden case ids to run (glob, repeatable), instead of the policy's golden.cases; "
                               "the verdict says partial.")),
    click.option("--limit", default=None, metavar="N",
                 help=env_help("limit", "At most N golden cases (the first chosen, in file order); the verdict says partial.")),
    click.option("--out", default=None, help=env_help("out", "Reports go to OUT/<run-id>/. [reports]")),
    click.option("--candidate-fault", "candidate_faults", multiple=True, metavar="NAME[=V]",
                  help=env_help("candidate_faults", "Fault for a bundled candidate (repeatable; `gatekeeper faults` lists them).")),
    click.option("--candidate-opt", "candidate_opts", multiple=True, metavar="KEY=VALUE",
                  help=env_help("candidate_opts", "Engine option for a bundled candidate (repeatable).")),
    click.option("--candidate-declare", "candidate_declare", multiple=True, metavar="KEY=VALUE",
                  help=env_help("candidate_declare", "The candidate's declared execution path: dtype=bf16, quantization=fp8, "
                            "kv_cache_dtype=, tp=4, label.NAME=VALUE (repeatable). Tolerances follow the declared dtype.")),
    click.option("--reference-declare", "reference_declare", multiple=True, metavar="KEY=VALUE",
                  help=env_help("reference_declare", "The reference's declared execution path (same keys).")),
    click.option("--reference-key-env", "reference_key_env", default=None, metavar="NAME",
                 help=env_help("reference_key_env", "The NAME of the environment variable holding the reference's API "
                               "key (URL and launch targets; sent as a Bearer token, never printed).")),
    click.option("--candidate-key-env", "candidate_key_env", default=None, metavar="NAME",
                 help=env_help("candidate_key_env", "The NAME of the variable holding the candidate's API key.")),
    click.option("--reference-log-file", "reference_log_file", default=None, metavar="PATH",
                 help=env_help("reference_log_file", "A URL reference's log file, read for gate 1's log rules "
                               "(a launched or bundled target's log is captured already).")),
    click.option("--candidate-log-file", "candidate_log_file", default=None, metavar="PATH",
                 help=env_help("candidate_log_file", "A URL candidate's log file.")),
    click.option("--reference-log-command", "reference_log_command", default=None, metavar="CMD",
                 help=env_help("reference_log_command", "A command printing a URL reference's log, e.g. "
                               "'docker logs vllm' (instead of --reference-log-file).")),
    click.option("--candidate-log-command", "candidate_log_command", default=None, metavar="CMD",
                 help=env_help("candidate_log_command", "A command printing a URL candidate's log.")),
    click.option("--reference-cache", "reference_cache", default=None, metavar="DIR",
                 help=env_help("reference_cache", "Cache the reference's answers in DIR, keyed by its model, /version "
                               "and declared path: later runs against the same reference ask it only what is new "
                               "(not gate 1, not the performance gate). Off unless set.")),
    click.option("--report-url", "report_url", default=None, metavar="BASE",
                 help=env_help("report_url", "The http(s) URL this run directory's files are published under: "
                               "summary.md's links become BASE/correctness.html#check-… and BASE/<file>, so they work "
                               "in a PR comment or a job summary. [relative links]")),
    click.option("--on-rollback", "on_rollback", multiple=True, metavar="CMD|URL",
                  help=env_help("on_rollback", "A command to run, or a webhook URL to POST, when the verdict is ROLLBACK "
                            "(repeatable; never on PROMOTE or HOLD).")),
    click.option("--seed", default=None, help=env_help("seed", "Seed. [0]")),
    click.option("--timeout", default=None, help=env_help("timeout", "Each request's overall deadline in seconds. [120]")),
    click.option("--shadow-store", default=None, help=env_help("shadow_store", "Judge gate 5 on a `gatekeeper shadow` pair "
                 "store instead of replaying traffic.")),
]


def run_options(command: Callable[..., None]) -> Callable[..., None]:
    """The layered run options (config, targets, policy, gates, faults, ...), shared by
    `gatekeeper run` and `gatekeeper matrix run`, whose cells get them."""
    for option in reversed(RUN_OPTIONS):
        command = option(command)
    return command


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
