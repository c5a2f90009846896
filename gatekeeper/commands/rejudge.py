"""`gatekeeper rejudge RUN_DIR`: the gates again on the answers a finished run recorded, no server asked.

Under the run's own policy it reproduces the run's verdict and every check status; under another
(`--policy`) it says what that policy would have decided on the same answers. Exit codes as `run`:
0 PROMOTE, 1 ROLLBACK, 2 HOLD, 3 bad input (not a finished run, no recorded answers, a bad policy).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from gatekeeper import exit_codes
from gatekeeper.cli_exit import crashed, fail, json_errors
from gatekeeper.errors import GatekeeperError


@click.command()
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--policy", default=None, metavar="FILE", help="Judge under this policy instead of the run's own.")
@click.option("--out", default=None, metavar="DIR", help="Reports go to DIR/<new-run-id>/. [the run's own parent directory]")
@click.option("--report-url", default=None, metavar="BASE",
              help="The http(s) URL the new run directory's files are published under: summary.md's links become "
                   "absolute (as `gatekeeper run --report-url`; the recorded run's is not reused). [relative links]")
@click.option("--json", "as_json", is_flag=True, help="Print summary.json to stdout.")
def rejudge(run_dir: Path, policy: str | None, out: str | None, report_url: str | None, as_json: bool) -> None:
    """Judge a finished run's recorded answers again, under its policy or another, without
    calling any server. Every gate runs on the answers the run recorded (answers/ in RUN_DIR); a
    request the run did not make is an ERROR (HOLD), never a guess. The performance gate measures
    load, which cannot be replayed: its recorded result is carried over when the policy asks it the
    same question, otherwise it is a blocking SKIP (HOLD). A new run directory is written, its
    summary.json naming the run it re-judged."""
    from dataclasses import replace

    from gatekeeper.errors import ConfigError
    from gatekeeper.run.plan import build_plan, new_run_id
    from gatekeeper.commands.progress import Progress
    from gatekeeper.run.run_dir import INCOMPLETE, fingerprint, read_plan_options
    from gatekeeper.tape.recording import DIR, TARGETS
    from gatekeeper.run.rejudge import ReplayRunner

    if as_json:
        json_errors()
    try:
        base = _report_url(report_url)
        if not run_dir.is_dir():
            raise ConfigError(f"{run_dir}: no such run directory")
        if (run_dir / INCOMPLETE).exists():
            raise ConfigError(f"{run_dir}: the run did not finish ({INCOMPLETE}); finish it with --resume, then re-judge it")
        if (run_dir / "answers.interrupted").exists():
            raise ConfigError(f"{run_dir}: the run was resumed (--resume): its gates were answered by two launches, and "
                              "its recording cannot be replayed as one run; re-judge a run that was not interrupted")
        if not (run_dir / DIR / TARGETS).is_file():
            raise ConfigError(f"{run_dir}: no recorded answers ({DIR}/{TARGETS} is missing: a run made before gatekeeper "
                              "recorded answers)")
        options, sources = read_plan_options(run_dir)
        original = build_plan(options, sources, run_dir.name, asks_servers=False)
        if policy:
            options, sources = replace(options, policy=policy), sources.with_layer("policy", "flag")
        options = replace(options, out=out or str(run_dir.parent),
                          on_rollback=(), reference_cache=None,  # a rejudge notifies no one and asks nothing
                          report_url=base)  # another run directory: the recorded run's base is not its
        plan = build_plan(options, sources, new_run_id(), asks_servers=False)
        parts = fingerprint(plan)
    except ConfigError as e:
        fail(str(e), exit_codes.USAGE, e.hint)
    progress = Progress(plan.redactor())
    before = _recorded_fingerprint(run_dir)
    for part in ("golden_sets", "policy_files", "model", "code"):
        if before.get(part) not in (None, parts[part]):
            progress(f"note: the {part.replace('_', ' ')} differ from the recorded run's: requests it did not make are "
                     "ERRORs, changed expectations are judged as they are now")
    try:
        result = ReplayRunner(plan, original, run_dir, progress, parts).run()
    except GatekeeperError as e:
        fail(str(e), exit_codes.HOLD, "no verdict: the rejudge could not finish")
    except Exception as e:  # noqa: BLE001 — gatekeeper's own failure: its own exit code
        crashed(e, plan.redactor())
    progress.summary(result, plan.out_dir / plan.run_id)
    if as_json:
        from gatekeeper.report.run.summary_json import SummaryJsonRenderer

        click.echo((plan.out_dir / plan.run_id / SummaryJsonRenderer.filename).read_text())
    sys.exit(result.exit_code)


def _report_url(given: str | None) -> str | None:
    """--report-url checked as `gatekeeper run` checks it (ConfigError naming the flag)."""
    from gatekeeper.config.option_table import BY_NAME
    from gatekeeper.errors import ConfigError

    if given is None:
        return None
    try:
        return str(BY_NAME["report_url"].value(given))
    except ValueError as e:
        raise ConfigError(f"--report-url: {e}") from None


def _recorded_fingerprint(run_dir: Path) -> dict[str, str]:
    """The fingerprint parts the recorded run wrote in plan.json (empty when unreadable)."""
    import json

    try:
        parts = json.loads((run_dir / "plan.json").read_text(encoding="utf-8"))["fingerprint"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return parts if isinstance(parts, dict) else {}
