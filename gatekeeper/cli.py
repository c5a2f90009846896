"""The `gatekeeper` command line: parse flags, build options, hand over, map errors to exit codes.

Only this module touches argv and the exit code. Every error reaches the user as one line on
stderr, never a traceback. Exit codes:
  0  success
  1  startup failure (missing checkpoint, an engine that cannot start, a port in use)
  3  usage or configuration error (unknown flag, bad option value, unknown fault)
"""

from __future__ import annotations

import sys
from dataclasses import fields
from pathlib import Path
from typing import NoReturn

import click

from gatekeeper import __version__

EXIT_OK = 0
EXIT_STARTUP_FAILURE = 1
EXIT_HOLD = 2
EXIT_USAGE = 3

DEFAULT_MODEL = Path(__file__).resolve().parent / "models" / "gk-tiny"


def _fail(message: str, code: int, hint: str | None = None) -> NoReturn:
    click.echo(f"gatekeeper: error: {message}" + (f" ({hint})" if hint else ""), err=True)
    sys.exit(code)


class _Main(click.Group):
    """A click group whose errors are one line and whose usage errors exit with EXIT_USAGE."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):  # type: ignore[override]
        try:
            rv = super().main(args=args, prog_name=prog_name or "gatekeeper", complete_var=complete_var,
                              standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as e:
            click.echo(e.ctx.get_help() if e.ctx else str(e), err=True)
            sys.exit(EXIT_USAGE)
        except click.UsageError as e:
            command = e.ctx.command_path if e.ctx else "gatekeeper"
            _fail(e.format_message(), EXIT_USAGE, f"see `{command} --help`")
        except click.ClickException as e:
            _fail(e.format_message(), EXIT_USAGE)
        except click.Abort:
            click.echo("gatekeeper: interrupted", err=True)
            sys.exit(130)
        sys.exit(rv if isinstance(rv, int) else EXIT_OK)


def _default(name: str):
    from gatekeeper.engine.engine_args import EngineArgs

    return next(f.default for f in fields(EngineArgs) if f.name == name)


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="gatekeeper")
def main() -> None:
    """gatekeeper: a correctness gate for upgrades of LLM inference engines."""


@main.command()
@click.option("--model", type=click.Path(), default=None,
              help="Checkpoint directory (Hugging Face layout). Default: the shipped gk-tiny.")
@click.option("--profile", type=click.Choice(["reference", "optimized"]), default=_default("profile"), show_default=True,
              help="Execution path: slow trusted reference, or the paged/batched optimized path.")
@click.option("--served-model-name", default=None, help="Model id clients send (default: the checkpoint's name).")
@click.option("--dtype", default=_default("dtype"), show_default=True, help="fp32|bf16|fp16|fp64 (or the long names).")
@click.option("--kv-cache-dtype", default=_default("kv_cache_dtype"), show_default=True, help="KV cache dtype; auto = --dtype.")
@click.option("--block-size", type=int, default=_default("block_size"), show_default=True, help="Tokens per KV block.")
@click.option("--num-kv-blocks", type=int, default=_default("num_kv_blocks"), show_default=True, help="KV blocks preallocated.")
@click.option("--max-num-seqs", type=int, default=_default("max_num_seqs"), show_default=True, help="Sequences per batch.")
@click.option("--max-num-batched-tokens", type=int, default=_default("max_num_batched_tokens"), show_default=True,
              help="Tokens per engine step.")
@click.option("--max-model-len", type=int, default=None, help="Context length (default: the model's).")
@click.option("--tp", type=int, default=_default("tp"), show_default=True, help="Simulated tensor-parallel shards.")
@click.option("--fused-norm/--no-fused-norm", default=_default("fused_norm"), show_default=True,
              help="Fused residual-add + RMSNorm path.")
@click.option("--prefix-caching/--no-prefix-caching", default=_default("prefix_caching"), show_default=True,
              help="Reuse KV blocks of shared prompt prefixes.")
@click.option("--disable-logprobs", is_flag=True, help="Ignore logprobs requests (answer logprobs: null).")
@click.option("--seed", type=int, default=_default("seed"), show_default=True, help="Global random seed.")
@click.option("--threads", type=int, default=_default("threads"), show_default=True, help="torch intra-op threads.")
@click.option("--fault", "faults", multiple=True, metavar="NAME[=VALUE]",
              help="Turn on a fault switch (repeatable; see `gatekeeper faults`).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (loopback by default).")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True, help="Port to bind.")
@click.option("--api-key", default=None, help="Require `Authorization: Bearer KEY` on /v1/*.")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]), default="info", show_default=True)
def serve(model: str | None, host: str, port: int, api_key: str | None, log_level: str, faults: tuple[str, ...],
          **options) -> None:
    """Start the bundled OpenAI-compatible server over a checkpoint."""
    from gatekeeper.engine.engine_args import EngineArgs
    from gatekeeper.engine.errors import EngineError, EngineOptionError
    from gatekeeper.engine.faults import FaultSet

    try:
        args = EngineArgs(model=str(model or DEFAULT_MODEL), faults=FaultSet.parse(list(faults)), **options)
    except EngineOptionError as e:
        _fail(str(e), EXIT_USAGE, "see `gatekeeper serve --help`")
    if model is None and not DEFAULT_MODEL.is_dir():
        _fail(f"the shipped model is missing at {DEFAULT_MODEL}", EXIT_STARTUP_FAILURE, "pass --model DIR")
    from gatekeeper.engine.server.launch import ServerStartupError, serve as run_server

    try:
        run_server(args, host=host, port=port, api_key=api_key, log_level=log_level)
    except ServerStartupError as e:
        _fail(str(e), EXIT_STARTUP_FAILURE)
    except EngineOptionError as e:
        _fail(str(e), EXIT_USAGE, "see `gatekeeper serve --help`")
    except EngineError as e:
        _fail(str(e), EXIT_STARTUP_FAILURE)
    except KeyboardInterrupt:
        pass
    except Exception as e:  # a startup failure we did not foresee: still one line, no traceback
        _fail(f"startup failed: {type(e).__name__}: {e}", EXIT_STARTUP_FAILURE)


@main.command("faults")
def list_faults() -> None:
    """List the engine's fault switches and the bug class each one models."""
    from gatekeeper.engine.faults import FAULTS

    width = max(len(f.name) for f in FAULTS.values()) + len("=VALUE")
    for f in FAULTS.values():
        name = f"{f.name}=PCT" if f.name == "decode-slowdown" else f"{f.name}=VALUE" if f.takes_value else f.name
        default = f" (default {f.default_value:g})" if f.takes_value and f.default_value is not None else ""
        click.echo(f"{name:<{width}}  {f.models}{default}")
        click.echo(f"{'':<{width}}  trigger: {f.trigger}")


@main.command()
@click.option("-c", "--config", "config_path", type=click.Path(), default=None, help="Run-config YAML (layer 2 of 4).")
@click.option("--reference", default=None, help="Reference target: bundled[:reference|optimized] or a URL. [bundled:reference]")
@click.option("--candidate", default=None, help="Candidate target (same forms). [bundled:optimized]")
@click.option("--model", default=None, help="Checkpoint for bundled targets. [the shipped gk-tiny]")
@click.option("--policy", default=None, help="Gate policy YAML. [gates/default.yaml]")
@click.option("--golden", multiple=True, help="Golden set YAML (repeatable). [golden_sets/core.yaml]")
@click.option("--gates", default=None, help="Comma-separated gates to run, e.g. startup,numerics,golden. [all enabled]")
@click.option("--out", default=None, help="Reports go to OUT/<run-id>/. [reports]")
@click.option("--candidate-fault", "candidate_faults", multiple=True, metavar="NAME[=V]", help="Fault for a bundled candidate.")
@click.option("--candidate-opt", "candidate_opts", multiple=True, metavar="KEY=VALUE", help="Engine option for a bundled candidate.")
@click.option("--seed", type=int, default=None, help="Seed. [0]")
@click.option("--timeout", type=float, default=None, help="Per-request timeout in seconds. [120]")
@click.option("--json", "as_json", is_flag=True, help="Print summary.json to stdout.")
def run(config_path: str | None, as_json: bool, **flags) -> None:
    """Run the gates on a candidate beside a reference and decide PROMOTE / HOLD / ROLLBACK.

    Options come from built-in defaults, then the run config (-c), then GATEKEEPER_<OPTION>
    environment variables, then these flags. Exit codes: 0 PROMOTE, 1 ROLLBACK, 2 HOLD,
    3 usage or configuration error.
    """
    import os

    from gatekeeper.config.run_config import resolve
    from gatekeeper.errors import ConfigError, GatekeeperError
    from gatekeeper.plan import build_plan
    from gatekeeper.progress import Progress
    from gatekeeper.runner import Runner

    try:
        values, sources = resolve(config_path, os.environ, flags)
        plan = build_plan(values, sources)
    except ConfigError as e:
        _fail(str(e), EXIT_USAGE)
    progress = Progress()
    try:
        result = Runner(plan, progress).run()
    except GatekeeperError as e:
        _fail(str(e), EXIT_HOLD, "no verdict: the run could not finish")
    except Exception as e:  # fail closed, one line
        _fail(f"run failed: {type(e).__name__}: {e}", EXIT_HOLD, "no verdict: the run could not finish")
    progress.summary(result, plan.out_dir / plan.run_id)
    if as_json:
        click.echo((plan.out_dir / plan.run_id / "summary.json").read_text())
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
    from gatekeeper.errors import ConfigError, GatekeeperError
    from gatekeeper.golden_record import record_target

    try:
        n = record_target(target, golden_path, out_path, model)
    except ConfigError as e:
        _fail(str(e), EXIT_USAGE)
    except GatekeeperError as e:
        _fail(str(e), EXIT_STARTUP_FAILURE)
    click.echo(f"recorded {n} answers to {out_path}", err=True)


if __name__ == "__main__":
    main()
