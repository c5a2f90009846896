"""The `gatekeeper` command line: parse flags, build options, hand over, map errors to exit codes.

Only this module touches argv and the exit code. Every error reaches the user as one line on
stderr, never a traceback: a GatekeeperError carries its exit code (`gatekeeper/exit_codes.py`,
the one table of them: for `run`, 0 PROMOTE, 1 ROLLBACK, 2 HOLD; for `serve` and `golden record`,
1 an engine that cannot start; 3 a usage or configuration error everywhere).

The engine's commands (`serve`, `faults`) live in `gatekeeper/engine/commands.py` and are loaded
only when invoked or listed, so importing this module imports neither torch nor the engine.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable
from pathlib import Path

import click

from gatekeeper.cli_types import Finite

from gatekeeper import __version__, exit_codes
from gatekeeper.cli_exit import crashed, fail as _fail, json_errors, stop_on_signals
from gatekeeper.errors import GatekeeperError, Terminated

_ENGINE_COMMANDS = {"serve": "serve", "faults": "list_faults"}  # command -> function in gatekeeper.engine.commands


class _Main(click.Group):
    """A click group whose errors are one line with their exit code, and whose engine commands
    load lazily."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        """The gate side's commands and the engine's."""
        return sorted([*super().list_commands(ctx), *_ENGINE_COMMANDS])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """A command by name; the engine's are imported on first use."""
        if cmd_name not in _ENGINE_COMMANDS:
            return super().get_command(ctx, cmd_name)
        try:
            module = importlib.import_module("gatekeeper.engine.commands")
        except ImportError as e:
            raise click.ClickException(f"`gatekeeper {cmd_name}` needs the engine extra "
                                       f"(pip install torch==2.13.0 && pip install 'gatekeeper[engine]'): {e}") from None
        command: click.Command = getattr(module, _ENGINE_COMMANDS[cmd_name])
        return command

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        stop_on_signals()
        try:
            rv = super().main(args=args, prog_name=prog_name or "gatekeeper", complete_var=complete_var,
                              standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as e:
            click.echo(e.ctx.get_help() if e.ctx else str(e), err=True)
            sys.exit(exit_codes.USAGE)
        except click.UsageError as e:
            command = e.ctx.command_path if e.ctx else "gatekeeper"
            _fail(e.format_message(), exit_codes.USAGE, f"see `{command} --help`")
        except click.ClickException as e:
            _fail(e.format_message(), exit_codes.USAGE)
        except GatekeeperError as e:
            _fail(str(e), e.exit_code, e.hint)
        except click.Abort:
            _fail("interrupted", exit_codes.INTERRUPTED)
        except Terminated as e:
            _fail(str(e), e.exit_code)
        except Exception as e:  # noqa: BLE001 — gatekeeper's own failure: its own exit code, never ROLLBACK's
            crashed(e)
        sys.exit(rv if isinstance(rv, int) else exit_codes.OK)


def _discard(run_dir: Path) -> None:
    """Remove what a run that never started left in its directory: a dry run's scratch
    directory, or a cell's merged policy written before the plan failed."""
    import shutil

    from gatekeeper.matrix.cell_run import POLICY_FILE

    if run_dir.is_dir() and {p.name for p in run_dir.iterdir()} <= {POLICY_FILE}:
        shutil.rmtree(run_dir)


def _env(option: str, text: str) -> str:
    """An option's help with the environment variable that sets it."""
    from gatekeeper.config.run_config import BY_NAME

    return f"{text} [env: {BY_NAME[option].env}]"


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="gatekeeper")
def main() -> None:
    """gatekeeper: a correctness gate for upgrades of LLM inference engines."""


_RUN_OPTIONS = [
    click.option("-c", "--config", "config_path", type=click.Path(), default=None, help="Run-config YAML (layer 2 of 4)."),
    click.option("--reference", default=None,
                  help=_env("reference", "Reference target: bundled[:reference|optimized] or a URL. [bundled:reference]")),
    click.option("--candidate", default=None, help=_env("candidate", "Candidate target (same forms). [bundled:optimized]")),
    click.option("--model", default=None, help=_env("model", "The model: a checkpoint directory for bundled targets [the shipped "
                  "gk-tiny], else the served model id URL/launch targets are asked for.")),
    click.option("--served-model", default=None, help=_env("served_model", "Served model id for URL and launch targets. "
                  "[the first /v1/models lists]")),
    click.option("--policy", default=None, help=_env("policy", "Gate policy YAML. [gates/default.yaml]")),
    click.option("--golden", multiple=True, help=_env("golden", "Golden set YAML (repeatable). [golden_sets/core.yaml]")),
    click.option("--gates", default=None, help=_env("gates", "Comma-separated gates to run, e.g. startup,numerics,golden. [all enabled]")),
    click.option("--out", default=None, help=_env("out", "Reports go to OUT/<run-id>/. [reports]")),
    click.option("--candidate-fault", "candidate_faults", multiple=True, metavar="NAME[=V]",
                  help=_env("candidate_faults", "Fault for a bundled candidate (repeatable; `gatekeeper faults` lists them).")),
    click.option("--candidate-opt", "candidate_opts", multiple=True, metavar="KEY=VALUE",
                  help=_env("candidate_opts", "Engine option for a bundled candidate (repeatable).")),
    click.option("--candidate-declare", "candidate_declare", multiple=True, metavar="KEY=VALUE",
                  help=_env("candidate_declare", "The candidate's declared execution path: dtype=bf16, quantization=fp8, "
                            "kv_cache_dtype=, tp=4, label.NAME=VALUE (repeatable). Tolerances follow the declared dtype.")),
    click.option("--reference-declare", "reference_declare", multiple=True, metavar="KEY=VALUE",
                  help=_env("reference_declare", "The reference's declared execution path (same keys).")),
    click.option("--on-rollback", "on_rollback", multiple=True, metavar="CMD|URL",
                  help=_env("on_rollback", "A command to run, or a webhook URL to POST, when the verdict is ROLLBACK "
                            "(repeatable; never on PROMOTE or HOLD).")),
    click.option("--seed", default=None, help=_env("seed", "Seed. [0]")),
    click.option("--timeout", default=None, help=_env("timeout", "Each request's overall deadline in seconds. [120]")),
    click.option("--shadow-store", default=None, help=_env("shadow_store", "Judge gate 5 on a `gatekeeper shadow` pair "
                 "store instead of replaying traffic.")),
]


def _run_options(command: Callable[..., None]) -> Callable[..., None]:
    """The layered run options (config, targets, policy, gates, faults, ...), shared by
    `gatekeeper run` and `gatekeeper matrix run`, whose cells get them."""
    for option in reversed(_RUN_OPTIONS):
        command = option(command)
    return command


@main.command()
@_run_options
@click.option("--matrix", default=None, help=_env("matrix", "Matrix file (matrices/*.yaml): run one of its cells (--cell)."))
@click.option("--cell", default=None, help=_env("cell", "The matrix cell to run, by id (`gatekeeper matrix plan M` lists them)."))
@click.option("--dry-run", is_flag=True, help="Print the resolved plan (targets, policy, gates, golden cases) and exit.")
@click.option("--json", "as_json", is_flag=True, help="Print summary.json to stdout.")
@click.option("--resume", "resume_dir", default=None, metavar="RUN_DIR",
              help="Continue the interrupted run in RUN_DIR (it has incomplete.json): give the same options; its "
                   "finished gates are reused, the rest run again, one report is written.")
def run(config_path: str | None, as_json: bool, dry_run: bool, resume_dir: str | None, **flags) -> None:
    """Run the gates on a candidate beside a reference and decide PROMOTE / HOLD / ROLLBACK.

    Options come from built-in defaults, then the run config (-c), then GATEKEEPER_<OPTION>
    environment variables, then these flags. With --matrix and --cell, the cell's candidate,
    declared path and policy fragments go on top, and cell.json marks the run directory as the
    cell's (docs/matrices.md). Exit codes: 0 PROMOTE, 1 ROLLBACK, 2 HOLD, 3 usage or
    configuration error.
    """
    import os
    import tempfile

    from gatekeeper.config.run_config import resolve
    from gatekeeper.errors import ConfigError
    from gatekeeper.plan import build_plan, new_run_id
    from gatekeeper.progress import Progress
    from gatekeeper.runner import Runner

    from gatekeeper.run_dir import check_resumable, fingerprint

    if as_json:
        json_errors()
    if resume_dir and dry_run:
        _fail("--resume and --dry-run do not go together", exit_codes.USAGE)
    run_id = Path(resume_dir).name if resume_dir else new_run_id()
    run_dir: Path | None = None
    cell_run = None
    resumable = None
    try:
        values, sources = resolve(config_path, os.environ, flags)
        if resume_dir:
            values["out"] = str(Path(resume_dir).parent)
        run_dir = Path(tempfile.mkdtemp(prefix="gatekeeper-dry-run-")) if dry_run else Path(values["out"]) / run_id
        if values["matrix"] or values["cell"]:
            from gatekeeper.matrix.cell_run import apply_cell

            values, sources, cell_run = apply_cell(values, sources, run_dir)  # may write the cell's policy there
        plan = build_plan(values, sources, run_id)
        parts = fingerprint(plan, values)
        if resume_dir:
            resumable = check_resumable(Path(resume_dir), parts)
    except ConfigError as e:
        if run_dir is not None and not resume_dir:
            _discard(run_dir)
        _fail(str(e), exit_codes.USAGE, e.hint)
    if dry_run:
        from gatekeeper.plan import describe_plan

        if cell_run is not None:
            click.echo(f"matrix {cell_run.matrix.path} cell {cell_run.cell.id} (expected: {cell_run.expected or 'nothing'})")
        click.echo(plan.redactor().text(describe_plan(plan, sources)))
        _discard(run_dir)
        sys.exit(exit_codes.OK)
    progress = Progress(plan.redactor())
    if cell_run is not None:
        cell_run.write(run_dir, run_id)
        progress(f"matrix {cell_run.matrix.name} cell {cell_run.cell.id}"
                 + (f" (expected {cell_run.expected})" if cell_run.expected else ""))
    try:
        result = Runner(plan, progress, parts, resumable).run()
    except GatekeeperError as e:
        _fail(str(e), exit_codes.HOLD, "no verdict: the run could not finish")
    except Exception as e:  # noqa: BLE001 — gatekeeper's own failure: exit INTERNAL_ERROR, the run dir stays incomplete
        crashed(e, plan.redactor())
    progress.summary(result, plan.out_dir / plan.run_id)
    if cell_run is not None:
        from gatekeeper.matrix.record import write_record

        write_record(plan.out_dir / plan.run_id)  # seed 002 §7's record of the path this cell ran
    if as_json:
        from gatekeeper.report.summary_json import SummaryJsonRenderer

        click.echo((plan.out_dir / plan.run_id / SummaryJsonRenderer.filename).read_text())  # redacted when written
    sys.exit(result.exit_code)


@main.group()
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
    from gatekeeper.golden_record import record_target

    try:
        n = record_target(target, golden_path, out_path, model)
    except ConfigError:
        raise
    except GatekeeperError as e:  # the target could not start or answer: there is nothing to record
        _fail(str(e), exit_codes.STARTUP_FAILURE, e.hint)
    click.echo(f"recorded {n} answers to {out_path}", err=True)


@main.group()
def traffic() -> None:
    """Traffic-file tools (docs/traffic-format.md)."""


@traffic.command("check")
@click.argument("path")
def traffic_check(path: str) -> None:
    """Validate a traffic file: every line, with file:line for the first bad one (exit 3)."""
    from collections import Counter

    from gatekeeper.traffic.format import iter_records

    counts = Counter((r.tenant, r.kind) for r in iter_records(path))
    tenants = Counter(t for t, _ in counts.elements())
    kinds = Counter(k for _, k in counts.elements())
    click.echo(f"{path}: {sum(counts.values())} requests; tenants: "
               + ", ".join(f"{t} {n}" for t, n in tenants.most_common()) + "; kinds: "
               + ", ".join(f"{k} {n}" for k, n in kinds.most_common()))


@traffic.command("import")
@click.argument("input_path")
@click.option("--from", "source", type=click.Choice(["openai-batch"]), default="openai-batch", show_default=True,
              help="The format of INPUT_PATH: an OpenAI Batch API input file.")
@click.option("--responses", "responses_path", default=None, help="The batch's output file (answers become `response`).")
@click.option("--out", "out_path", required=True, help="The traffic file to write (atomically).")
def traffic_import(input_path: str, source: str, responses_path: str | None, out_path: str) -> None:
    """Convert a request log into the traffic format."""
    from gatekeeper.traffic.format import write_traffic
    from gatekeeper.traffic.importers import import_openai_batch

    records, skipped = import_openai_batch(input_path, responses_path)
    if not records:
        _fail(f"{input_path}: no chat or completions request to import", exit_codes.USAGE)
    n = write_traffic(out_path, records)
    click.echo(f"imported {n} requests to {out_path}" + (f"; skipped {len(skipped)} line(s) for other endpoints"
                                                          if skipped else ""), err=True)


@main.group()
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
    import json
    from pathlib import Path

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
    import json
    import os

    from gatekeeper.errors import ConfigError
    from gatekeeper.perf.figures import Slo, block_figures
    from gatekeeper.perf.loadgen import LoadProfile, LoadTarget, run_load
    from gatekeeper.perf.workload import Workload
    from gatekeeper.runner import served_model
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


@main.group()
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
@_run_options
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

    from gatekeeper.config.run_config import resolve
    from gatekeeper.matrix.cell_run import apply_cell, options_sha256
    from gatekeeper.matrix.spec import load_matrix
    from gatekeeper.matrix.sweep import exit_code, run_cells, table
    from gatekeeper.progress import Progress

    ctx = click.get_current_context()
    values, sources = resolve(config_path, os.environ, flags)
    m = load_matrix(path)
    with tempfile.TemporaryDirectory(prefix="gatekeeper-matrix-") as scratch:  # every cell's options, checked first
        for cell in m.cells:
            apply_cell({**values, "matrix": path, "cell": cell.id}, sources, Path(scratch) / "cell")
    root = Path(values["out"]) / m.name
    run_args = _argv_of(ctx, skip={"path", "out"})
    progress = Progress()
    progress(f"matrix {m.name}: {len(m.cells)} cells from {path}, under {root}/")
    outcomes = run_cells(m, path, root, run_args, options_sha256(values), list(values["candidate_faults"]), progress)
    click.echo(table(outcomes))
    kept = sum(o.kept for o in outcomes)
    missed = sum(o.matched is False for o in outcomes)
    progress(f"matrix {m.name}: {len(outcomes)} cells ({kept} kept, {len(outcomes) - kept} run)"
             + (f"; {missed} missed their expectation" if missed else ""))
    sys.exit(exit_code(outcomes))


@main.group()
def report() -> None:
    """Report tools."""


@report.command("merge")
@click.argument("dirs", nargs=-1, required=True)
@click.option("--out", "out_path", default="merged", show_default=True, help="Directory the merged report goes to.")
def report_merge(dirs: tuple[str, ...], out_path: str) -> None:
    """Merge a matrix's cell runs (run directories with cell.json, or trees of them, e.g. CI
    artifacts) into one report: cells × gates, the failing path localised, seed 002 §7 records,
    merged.json, summary.md, junit.xml (one suite per cell), merged.html. Exit code: the merged
    verdict's (0 PROMOTE, 1 ROLLBACK, 2 HOLD)."""
    from gatekeeper.matrix.merge import EXIT, merge

    verdict, out = merge([Path(d) for d in dirs], Path(out_path))
    data = json.loads((out / "merged.json").read_text())
    for cell in data["cells"]:
        expected = "" if cell["expected"] is None else f"  expected {cell['expected']}{' ✓' if cell['met'] else ' ✗'}"
        click.echo(f"  {cell['verdict']:<8} {cell['cell']}{expected}")
    click.echo(f"localisation: {data['localisation']}")
    click.echo(f"verdict: {verdict} (exit {EXIT[verdict]}); report: {out}/ (merged.html, merged.json, summary.md, junit.xml)")
    sys.exit(EXIT[verdict])

@main.command()
@click.option("--quick", is_flag=True, help="The subset that runs in about a minute (smoke policy, the gates each cell needs).")
@click.option("--out", "out_path", default="reports/selftest", show_default=True, help="Where the cells' runs and the report go.")
@click.option("--model", default=None, help="Checkpoint for the bundled targets [the shipped gk-tiny].")
def selftest(quick: bool, out_path: str, model: str | None) -> None:
    """Run the bundled engine's faults (each with its trigger) and clean cells through the gates:
    the detection matrix (fault × gate), catches at the intended gate, misses, false alarms on
    the clean cells (selftest.html, selftest.json). Resumable. Exit 0 when every fault was caught
    at an intended gate and every clean cell promoted, else 1."""
    from gatekeeper.progress import Progress
    from gatekeeper.selftest.run import run_selftest

    data = run_selftest(Path(out_path), quick, ["--model", model] if model else [], Progress())
    click.echo(f"selftest{' (quick)' if quick else ''}: {data['caught']}/{data['faults']} faults caught, "
               f"{data['caught_at_intended_gate']} at an intended gate; missed: {', '.join(data['missed']) or 'none'}; "
               f"false alarms: {len(data['false_alarms'])}/{data['clean_cells']} clean cells; "
               f"not covered: {', '.join(data['not_covered']) or 'none'}; {data['wall_s']:.0f} s "
               f"({data['cells_s']:.0f} s of cell runs, kept ones included)")
    click.echo(f"report: {out_path}/selftest.html")
    sys.exit(0 if data["ok"] else 1)

def _argv_of(ctx: click.Context, skip: set[str]) -> list[str]:
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


def _live_commands() -> None:
    from gatekeeper.live.commands import pairs, record, shadow

    traffic.add_command(record)
    main.add_command(shadow)
    main.add_command(pairs)


_live_commands()

if __name__ == "__main__":
    main()
