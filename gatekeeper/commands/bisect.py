"""`gatekeeper bisect`: the first bad build between a good and a bad one (gatekeeper/bisect/).

Exit codes as for `run`: 0 decided (the first bad build found, or none in the range), 2 undecided
(skipped builds in the way, or the bad build could not be judged), 3 a usage error.
"""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

import click

from gatekeeper import exit_codes
from gatekeeper.errors import ConfigError
from gatekeeper.results import Status, Verdict

_STATUSES_TO_BISECT = (Status.FAIL,)


@click.command()
@click.option("--good", required=True, help="The last build known good (the reference of every step).")
@click.option("--bad", required=True, help="A build known bad (checked first: if it passes, there is no bad build).")
@click.option("--builds", "builds_spec", required=True,
              help="The ordered builds: a comma-separated list, a file (one a line), or pip:PACKAGE (its released versions).")
@click.option("--launch", "template", required=True,
              help="The launch command template: {build} is the build ({version}: the version of a PACKAGE==VERSION "
                   "build), {port} the free port gatekeeper picks, {model} the --model, e.g. "
                   "\"bash scripts/vllm_cpu.sh {version} --port {port}\".")
@click.option("--check", "checks", multiple=True, metavar="ID",
              help="A check to bisect on, e.g. longctx.needle_grid (repeatable); or take them from --from.")
@click.option("--from", "from_run", type=click.Path(), default=None,
              help="A ROLLBACK run directory: bisect on its failed blocking checks, with its policy and seed.")
@click.option("--model", default=None, help="The served model id (the launch's {model}).")
@click.option("--policy", default=None, help="Gate policy YAML. [gates/default.yaml, or the --from run's]")
@click.option("--seed", type=int, default=None, help="Seed of the first run per build (the next attempts add 1). [0]")
@click.option("--attempts", type=click.IntRange(1, 10), default=2, show_default=True,
              help="Runs per build before an undecided build is skipped.")
@click.option("--ready-timeout", type=click.FloatRange(1, 7200), default=600.0, show_default=True,
              help="Seconds a build may take to start.")
@click.option("--out", default=None, help="The bisect's directory (log, steps, report). [reports/bisect-<time>]")
@click.option("--resume", is_flag=True, help="Go on with the bisect logged in --out.")
def bisect(good: str, bad: str, builds_spec: str, template: str, checks: tuple[str, ...], from_run: str | None,
           model: str | None, policy: str | None, seed: int | None, attempts: int, ready_timeout: float,
           out: str | None, resume: bool) -> None:
    """Find the first bad build between a good and a bad engine build: each step launches one
    build as the candidate beside the good build and runs only the named checks' gates;
    good / bad / undecided (more runs, then a stated skip, as `git bisect skip`)."""
    from gatekeeper.bisect.builds import range_of, read_builds
    from gatekeeper.bisect.driver import bisect as run_bisect
    from gatekeeper.bisect.report import headline, write
    from gatekeeper.bisect.step import Setup
    from gatekeeper.gates.registry import GATES

    if not ("{build}" in template or "{version}" in template) or "{port}" not in template:
        raise ConfigError("must contain {build} (the build, or {version}: the version of a PACKAGE==VERSION build) and "
                          "{port} (the free port gatekeeper picks)", key="--launch")
    if from_run:
        found, run_policy, run_seed = _from_run(Path(from_run))
        checks = checks or found
        policy = policy or run_policy
        seed = run_seed if seed is None else seed
    if not checks:
        raise ConfigError("name the checks to bisect on with --check ID, or a ROLLBACK run with --from", key="--check")
    known = set(GATES)
    for c in checks:
        if "." not in c or c.split(".", 1)[0] not in known:
            raise ConfigError(f"{c!r} is not a check id (GATE.NAME, the gate one of {', '.join(sorted(known))})", key="--check")
    builds = read_builds(builds_spec)
    g, b = range_of(builds, good, bad)
    out_dir = Path(out) if out else Path("reports") / f"bisect-{dt.datetime.now().strftime('%Y%m%dT%H%M%S')}"
    run_args = (*(("--policy", policy) if policy else ()),)
    setup = Setup(template, builds[g], tuple(checks), model, ready_timeout, run_args, attempts)
    result = run_bisect(setup, builds, g, b, out_dir, seed or 0, resume, lambda m: click.echo(m, err=True))
    paths = write(result, out_dir)
    click.echo(headline(result))
    for p in paths:
        click.echo(f"  {p}")
    sys.exit(exit_codes.OK if result.decided else exit_codes.HOLD)


def _from_run(run_dir: Path) -> tuple[tuple[str, ...], str | None, int | None]:
    """A ROLLBACK run's failed blocking checks, policy and seed (from its summary.json)."""
    from gatekeeper.run_summary import SummaryError, read_summary

    try:
        summary = read_summary(run_dir)
    except SummaryError as e:
        raise ConfigError(f"{e.summary} cannot be read as a run's summary ({e.why})", key="--from") from None
    if summary.verdict is not Verdict.ROLLBACK:
        raise ConfigError(f"the run in {run_dir} is {summary.verdict.value}, not ROLLBACK: nothing to bisect", key="--from")
    failed = tuple(c.id for c in summary.checks if c.status in _STATUSES_TO_BISECT and c.blocking)
    return failed, summary.policy, summary.seed
