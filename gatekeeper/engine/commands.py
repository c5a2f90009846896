"""The engine's commands, `gatekeeper serve` and `gatekeeper faults`.

`gatekeeper/cli.py` loads this module only when one of these commands is invoked (or listed in
`--help`), so importing the gate side's CLI never imports the engine. Errors are raised as the
gate side's GatekeeperErrors; the CLI turns them into one line and the exit code.
"""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import fields
from typing import NoReturn

import click

from gatekeeper.engine.engine_args import DEFAULT_MODEL
from gatekeeper.errors import ConfigError, TargetError, Terminated


def _default(name: str):
    from gatekeeper.engine.engine_args import EngineArgs

    return next(f.default for f in fields(EngineArgs) if f.name == name)


@click.command()
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
        raise ConfigError(str(e), hint="see `gatekeeper serve --help`") from None
    if model is None and not DEFAULT_MODEL.is_dir():
        raise TargetError(f"the shipped model is missing at {DEFAULT_MODEL}", hint="pass --model DIR")
    from gatekeeper.engine.server.launch import ServerStartupError, serve as run_server

    try:
        run_server(args, host=host, port=port, api_key=api_key, log_level=log_level)
    except Terminated as e:  # uvicorn shut down gracefully, then re-raised the signal it caught
        _end_now(str(e), e.exit_code)
    except KeyboardInterrupt:  # Ctrl-C: the way a server is ended by hand
        _end_now(None, 0)
    except ServerStartupError as e:
        raise TargetError(str(e)) from None
    except EngineOptionError as e:
        raise ConfigError(str(e), hint="see `gatekeeper serve --help`") from None
    except EngineError as e:
        raise TargetError(str(e)) from None
    except Exception as e:  # a startup failure we did not foresee: still one line, no traceback
        raise TargetError(f"startup failed: {type(e).__name__}: {e}") from None


def _end_now(message: str | None, code: int) -> NoReturn:
    """The server has stopped serving (every request answered or cut, the engine loop joined):
    say why and exit at once. The interpreter's own teardown of torch takes about a second, which
    every stop of a bundled target would wait for; nothing is left to flush but the logs."""
    logging.shutdown()
    if message:
        click.echo(f"gatekeeper: error: {message}", err=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


@click.command("faults")
def list_faults() -> None:
    """List the engine's fault switches and the bug class each one models."""
    from gatekeeper.engine.faults import FAULTS

    width = max(len(f.name) for f in FAULTS.values()) + len("=VALUE")
    for f in FAULTS.values():
        name = f"{f.name}=PCT" if f.name == "decode-slowdown" else f"{f.name}=VALUE" if f.takes_value else f.name
        low, high = f.value_range
        default = f" (default {f.default_value:g}; {low:g} to {high:.10g})" if f.takes_value and f.default_value is not None else ""
        click.echo(f"{name:<{width}}  {f.models}{default}")
        click.echo(f"{'':<{width}}  trigger: {f.trigger}")


