"""Engine options: one table, shared by `gatekeeper serve` and the Python API."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from gatekeeper.engine.errors import EngineOptionError
from gatekeeper.engine.faults import FaultSet

DEFAULT_MODEL = Path(__file__).resolve().parent.parent / "models" / "gk-tiny"  # the shipped gk-tiny

DTYPES = ("float32", "bfloat16", "float16", "float64")
DTYPE_ALIASES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "fp64": "float64", "auto": "float32"}
# The sizes' ranges (beyond the upper bounds a value is a typo that would exhaust memory, not a plan).
RANGES = {"block_size": (1, 1024), "num_kv_blocks": (1, 1 << 20), "max_num_seqs": (1, 1024),
          "max_num_batched_tokens": (1, 1 << 20), "max_model_len": (2, 1 << 20), "tp": (1, 64), "threads": (1, 256),
          "seed": (0, 2**63 - 1)}


@dataclass(frozen=True)
class EngineArgs:
    """Everything that selects an execution path and sizes its caches.

    `profile` "reference" is fp32/fp64, one sequence at a time, a contiguous cache and nothing
    shared; "optimized" uses the paged cache, the block manager and continuous batching, and is
    the only path where the remaining options and the faults act. `threads` is torch's
    intra-op thread count: 1 by default, because a tiny model's ops are far too small to
    split, and a reference and a candidate usually share the machine.
    """

    model: str
    profile: str = "optimized"
    served_model_name: str | None = None
    dtype: str = "float32"
    kv_cache_dtype: str = "auto"
    block_size: int = 16
    num_kv_blocks: int = 512
    max_num_seqs: int = 16
    max_num_batched_tokens: int = 4096
    max_model_len: int | None = None
    tp: int = 1
    fused_norm: bool = False
    prefix_caching: bool = True
    disable_logprobs: bool = False
    seed: int = 0
    threads: int = 1
    faults: FaultSet = field(default_factory=FaultSet)

    def __post_init__(self) -> None:
        for name in ("dtype", "kv_cache_dtype"):
            value = getattr(self, name)
            if name == "kv_cache_dtype" and value == "auto":
                continue
            value = DTYPE_ALIASES.get(value, value)
            if value not in DTYPES:
                raise EngineOptionError(f"--{name.replace('_', '-')} {getattr(self, name)!r}: choose from {', '.join(DTYPES)}")
            object.__setattr__(self, name, value)
        if self.profile not in ("reference", "optimized"):
            raise EngineOptionError(f"--profile {self.profile!r}: choose reference or optimized")
        if self.profile == "reference" and self.dtype not in ("float32", "float64"):
            raise EngineOptionError("the reference profile runs in float32 or float64 only")
        for name, (low, high) in RANGES.items():
            value = getattr(self, name)
            if value is not None and not low <= value <= high:
                raise EngineOptionError(f"--{name.replace('_', '-')} must be from {low} to {high}, not {value}")

    @property
    def cache_dtype(self) -> str:
        """The KV cache's dtype: the model dtype unless set."""
        return self.dtype if self.kv_cache_dtype == "auto" else self.kv_cache_dtype
