"""`gatekeeper perf`: performance history and a load generator for one server."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from pathlib import Path

import click

from gatekeeper.cli_types import Finite


@click.group()
def perf() -> None:
    """Performance tools (docs/perf-history.md)."""


@perf.command("history")
@click.argument("path")
@click.option("--metric", "metrics", multiple=True, metavar="NAME", help="Only this metric (repeatable). [all]")
@click.option("--last", type=click.IntRange(min=0), default=200, show_default=True,
              help="Analyse each metric's newest N runs (0: all).")
@click.option("--json", "as_json", is_flag=True, help="Print the trends as JSON.")
def perf_history(path: str, metrics: tuple[str, ...], last: int, as_json: bool) -> None:
    """Each metric's trend across the runs of a history file, and the runs where it changed."""
    import difflib

    from gatekeeper.errors import ConfigError
    from gatekeeper.perf.history import FORMAT_VERSION, MIN_RUNS, load_history, metric_names, trend

    if not Path(path).exists():
        raise ConfigError("no such history file (the performance gate appends a run to it)", path)
    entries = load_history(Path(path))
    known = metric_names(entries)
    for name in metrics:
        if name not in known:
            near = difflib.get_close_matches(name, known, n=1)
            raise ConfigError(f"no run has metric {name!r}" + (f" (did you mean {near[0]!r}?)" if near else ""), path)
    found = [trend(entries, name, last or None) for name in metrics or known]
    if as_json:
        click.echo(json.dumps({"version": FORMAT_VERSION, "path": path, "num_runs": len(entries), "min_runs": MIN_RUNS,
                               "trends": [t.to_json() for t in found]}, indent=2))
    elif not entries:
        click.echo(f"{path}: no runs recorded yet (the file is empty)")
    else:
        click.echo(f"{path}: {len(entries)} run{'s' * (len(entries) != 1)}, {len(known)} metric{'s' * (len(known) != 1)}")
        for t in found:
            click.echo(t.summary())
            for change in t.changes():
                click.echo(f"  {change.describe()}")


@perf.command("load")
@click.argument("url")
@click.option("--model", default=None, help="Model id to send. [the first /v1/models lists]")
@click.option("--profile", type=click.Choice(["synchronous", "concurrent", "rate", "poisson"]), default="concurrent",
              show_default=True)
@click.option("--concurrency", type=click.IntRange(min=0, max=1024), default=8, show_default=True,
              help="Requests in flight (for rate/poisson: the cap; 0 = none).")
@click.option("--rate", type=Finite(min=0, min_open=True, max=100_000), default=None, help="Requests/s for rate and poisson.")
@click.option("--requests", "num_requests", type=click.IntRange(min=1), default=64, show_default=True)
@click.option("--warmup", type=click.IntRange(min=0), default=4, show_default=True, help="Leading requests not measured.")
@click.option("--input-tokens", nargs=2, type=int, default=(48, 160), show_default=True)
@click.option("--output-tokens", nargs=2, type=int, default=(32, 32), show_default=True)
@click.option("--no-ignore-eos", is_flag=True, help="Do not send vLLM's ignore_eos (output lengths uncontrolled).")
@click.option("--api-key-env", default=None, metavar="NAME", help="Environment variable holding the API key.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def perf_load(url: str, model: str | None, profile: str, concurrency: int, rate: float | None, num_requests: int,
              warmup: int, input_tokens: tuple[int, int], output_tokens: tuple[int, int], no_ignore_eos: bool,
              api_key_env: str | None, seed: int, as_json: bool) -> None:
    """Load one OpenAI-compatible server with the performance gate's generator and print its
    figures (definitions: gatekeeper/perf/figures.py)."""
    import os

    from gatekeeper.errors import ConfigError
    from gatekeeper.perf.figures import Slo, block_figures
    from gatekeeper.perf.loadgen import LoadProfile, LoadTarget, run_load
    from gatekeeper.perf.workload import Workload
    from gatekeeper.targets.served import served_model
    from gatekeeper.targets.interface import TargetSpec
    from gatekeeper.targets.spec import normalise_url

    if profile in ("rate", "poisson") and rate is None:
        raise ConfigError(f"--profile {profile} needs --rate", key="--rate")
    for name, (lo, hi) in (("--input-tokens", input_tokens), ("--output-tokens", output_tokens)):
        if not 1 <= lo <= hi:
            raise ConfigError("needs LOW HIGH with 1 <= LOW <= HIGH", key=name)
    key = os.environ.get(api_key_env) if api_key_env else None
    if api_key_env and key is None:
        raise ConfigError(f"the environment variable {api_key_env} is not set", key="--api-key-env")
    base = normalise_url(url)
    name = model or served_model(base, TargetSpec("url", url=base), key)
    if not name:
        raise ConfigError(f"no model read from {base}/v1/models (unreachable, or it lists none); pass --model",
                          key="--model")
    workload = Workload(input_tokens, output_tokens, not no_ignore_eos)
    result = run_load(LoadTarget(base, name, key), workload.requests(num_requests + warmup, seed),
                      LoadProfile(profile, concurrency=concurrency, rate=rate, warmup=warmup, seed=seed))
    figures = block_figures(result, Slo())
    errors = [r.error for r in result.measured if r.error]
    if as_json:
        click.echo(json.dumps({"url": base, "model": name, "profile": result.profile.describe(), "figures": figures,
                               "client_bound": result.client_bound, "errors": errors[:10]}, indent=2))
        return
    click.echo(f"{base} model {name}: {result.profile.describe()}, {len(result.measured)} measured requests "
               f"({warmup} warm-up), {len(errors)} failed" + (f" — first: {errors[0]}" if errors else ""))
    for k, v in figures.items():
        if v is not None:
            click.echo(f"  {k:<26} {v * 1000:10.2f} ms" if k.endswith("_s") and "_p" in k else f"  {k:<26} {v:10.4g}")
    if result.client_bound:
        click.echo("  warning: the load generator fell behind its schedule; the figures describe the client", err=True)


_CALIBRATE_OPTIONS = ("candidate", "model", "served_model", "policy", "out", "candidate_opts", "candidate_faults", "seed",
                      "timeout")


def _calibrate_options(command: Callable[..., None]) -> Callable[..., None]:
    """-c and the run options that say which build to launch and how to measure it."""
    from gatekeeper.commands.options import CONFIG, table_options

    return CONFIG(table_options(_CALIBRATE_OPTIONS)(command))


@perf.command("calibrate")
@_calibrate_options
@click.option("--pairs", type=click.IntRange(min=1, max=100), default=10, show_default=True,
              help="A/A launch pairs to measure (the gate uses a calibration from 10 on).")
def perf_calibrate(config_path: str | None, pairs: int, **flags: Any) -> None:
    """Launch the candidate's build twice per pair, measure both as the performance gate does, and
    append each pair to the performance history: the gate then puts this machine's launch-to-launch
    spread τ in its standard errors instead of the policy's assumed `launch_spread`
    (docs/performance.md). Takes about a minute per pair with the default policy."""
    import os
    import shutil
    import sys
    import tempfile

    from gatekeeper.cli_exit import crashed, fail
    from gatekeeper.config.run_config import resolve
    from gatekeeper.errors import ConfigError, GatekeeperError
    from gatekeeper.exit_codes import HOLD, OK, USAGE
    from gatekeeper.commands.calibrate import calibrate, calibration_target
    from gatekeeper.perf.calibration import MIN_PAIRS, machine_class, spread_of
    from gatekeeper.run.plan import build_plan, new_run_id
    from gatekeeper.commands.progress import Progress

    run_dir = Path(tempfile.mkdtemp(prefix="gatekeeper-calibrate-"))
    try:
        try:
            options, sources = resolve(config_path, os.environ, flags)
            plan = build_plan(options, sources, new_run_id())
            calibration_target(plan)
        except ConfigError as e:
            fail(str(e), USAGE, e.hint)
        progress = Progress(plan.redactor())
        try:
            path, found = calibrate(plan, pairs, run_dir, progress)
        except ConfigError as e:
            fail(str(e), USAGE, e.hint)
        except GatekeeperError as e:
            fail(str(e), HOLD, "the calibration stopped; the pairs measured so far are in the history")
        except Exception as e:  # noqa: BLE001 — gatekeeper's own failure
            crashed(e, plan.redactor())
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    click.echo(f"{path}: calibration for {machine_class()}")
    for figure, sp in sorted(found.items()):
        used = f"τ {spread_of(sp.bound):.2%} used (90% upper bound)" if sp.bound is not None else \
            f"not used yet ({sp.pairs} of {MIN_PAIRS} pairs)"
        click.echo(f"  {figure:<28} {sp.pairs:3d} pairs  τ estimate {spread_of(sp.estimate or 0.0):.2%}  {used}")
    sys.exit(OK)
