"""Building an engine core from EngineArgs: checkpoint, tokenizer, path, faults, startup lines."""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass
from pathlib import Path

import torch

from gatekeeper.engine.checkpoint import load_model
from gatekeeper.engine.engine_args import EngineArgs
from gatekeeper.engine.engine_core import EngineCore
from gatekeeper.engine.errors import CheckpointError, EngineError, EngineOptionError
from gatekeeper.engine.optimized_core import TORCH_DTYPES, OptimizedCore
from gatekeeper.engine.reference_core import ReferenceCore
from gatekeeper.engine.grammar import BACKEND, Grammars
from gatekeeper.engine.tokenizer import Tokenizer

log = logging.getLogger("gatekeeper.engine")

OPTIONAL_KERNEL_MODULE = "gk_flash_kernels"
"""An optional accelerated-kernel package the `optional-import` fault insists on importing."""


@dataclass
class EngineParts:
    """A ready core with its tokenizer, limits and the lines describing the active path."""

    core: EngineCore
    tokenizer: Tokenizer
    model_name: str
    max_model_len: int
    startup_lines: list[str]


def build_engine(args: EngineArgs) -> EngineParts:
    """Load the checkpoint and build the core `args.profile` selects.

    Raises EngineError subclasses with one readable line for anything a user can cause.
    """
    model_dir = Path(args.model)
    if not model_dir.is_dir():
        raise CheckpointError(f"{model_dir}: no such model directory")
    faults = args.faults
    optimized = args.profile == "optimized"
    if faults.names and not optimized:
        raise EngineOptionError("faults act on the optimized profile only (--profile optimized)")
    if "optional-import" in faults:
        try:
            importlib.import_module(OPTIONAL_KERNEL_MODULE)
        except ImportError as e:
            raise EngineError(f"ImportError: {e} (optional kernels were imported unconditionally at startup)") from None
    tokenizer = Tokenizer.from_dir(model_dir)
    rope_theta = None
    model, cfg = load_model(model_dir, TORCH_DTYPES[args.dtype])
    if "rope-drift" in faults:
        rope_theta = cfg.rope_theta * (faults.value("rope-drift") or 0.5)
        model, cfg = load_model(model_dir, TORCH_DTYPES[args.dtype], rope_theta=rope_theta)
    max_model_len = min(args.max_model_len or cfg.max_position_embeddings, cfg.max_position_embeddings)
    if args.max_model_len and args.max_model_len > cfg.max_position_embeddings:
        raise EngineOptionError(f"--max-model-len {args.max_model_len} exceeds the model's {cfg.max_position_embeddings}")
    if optimized and args.num_kv_blocks * args.block_size < max_model_len:
        raise EngineOptionError(
            f"--num-kv-blocks {args.num_kv_blocks} × --block-size {args.block_size} cannot hold one "
            f"sequence of max_model_len {max_model_len}"
        )
    # Simulated TP splits the row-parallel inputs (attention output features, MLP width) into
    # equal shards; real engines also need whole heads per rank, the simulation does not.
    attn_width = cfg.num_attention_heads * cfg.head_dim
    if optimized and args.tp > 1 and (attn_width % args.tp or cfg.intermediate_size % args.tp):
        raise EngineOptionError(f"--tp {args.tp} does not divide the model's attention width {attn_width} "
                                f"and MLP width {cfg.intermediate_size}")
    eos = tokenizer.eos_token_ids or ([tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else [])
    core_cls = OptimizedCore if optimized else ReferenceCore
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    core = core_cls(model, args, eos, max_model_len)
    core.grammars = Grammars(model_dir / "tokenizer.json", cfg.vocab_size, eos)
    lines = [
        f"model: {model_dir} ({cfg.model_type}, {sum(p.numel() for p in model.parameters()):,} parameters, "
        f"max_model_len {max_model_len})",
        f"execution path: profile={args.profile} dtype={args.dtype}",
        f"structured outputs: grammar backend {BACKEND}",
    ]
    if optimized:
        guard = "off" if "kv-stale-reuse" in faults else "on"
        norm_guard = "off" if "fused-norm-dtype" in faults else "on"
        lines.append(
            f"paged KV cache: {args.num_kv_blocks} blocks × {args.block_size} tokens, kv_cache_dtype={args.cache_dtype}, "
            f"prefix_caching={'on' if args.prefix_caching else 'off'}, block-reuse guard={guard}"
        )
        lines.append(
            f"scheduler: max_num_seqs={args.max_num_seqs} max_num_batched_tokens={core.scheduler.max_num_batched_tokens}; "
            f"tp={args.tp}; fused_norm={'on (dtype guard ' + norm_guard + ')' if args.fused_norm else 'off'}"
        )
        lines.append(f"attention: {'naive fallback' if 'silent-fallback' in faults else 'sdpa'}")
    else:
        lines.append("contiguous per-sequence KV cache, one sequence at a time, nothing shared")
    if "silent-fallback" in faults:
        lines.append("WARNING: fused attention kernel not available; falling back to a slower attention path")
    if rope_theta is not None:
        lines.append(f"rope: theta={rope_theta:g}")
    return EngineParts(core, tokenizer, model_dir.name, max_model_len, lines)
