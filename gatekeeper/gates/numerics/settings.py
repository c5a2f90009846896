"""Gate 2's settings, defaults and per-dtype tolerances (the `numerics:` section of a policy)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gatekeeper.config.settings import MAX_ANSWER_TOKENS, MAX_CONCURRENCY, check_ranges, require, setting

DEFAULT_PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):",
    "Reply with exactly: OK",
    "1, 2, 3, 4, 5,",
    '{"name": "Ada", "age":',
    "Translate to French: good morning ->",
    "Once upon a time, in a small village,",
    "The quick brown fox jumps over",
]

TOLERANCE_KEYS = ("max_abs_delta", "p99_abs_delta", "mean_abs_delta", "top1_min", "topk_overlap_min", "kl_max",
                  "nll_rel_drift_max")
_F32 = {"max_abs_delta": 0.01, "p99_abs_delta": 0.005, "mean_abs_delta": 0.001, "top1_min": 0.99, "topk_overlap_min": 0.95,
        "kl_max": 0.001, "nll_rel_drift_max": 0.002}
_HALF = {"max_abs_delta": 1.5, "p99_abs_delta": 0.8, "mean_abs_delta": 0.15, "top1_min": 0.85, "topk_overlap_min": 0.75,
         "kl_max": 0.1, "nll_rel_drift_max": 0.05}


# Each limit's range: logprob deltas and KL in nats, the top-1 and top-k shares and the NLL drift as fractions.
TOLERANCE_RANGES = {"max_abs_delta": (0, 100), "p99_abs_delta": (0, 100), "mean_abs_delta": (0, 100), "top1_min": (0, 1),
                    "topk_overlap_min": (0, 1), "kl_max": (0, 100), "nll_rel_drift_max": (0, 10)}
_TOLERANCE_ROW = {"type": "object", "required": list(TOLERANCE_KEYS), "additionalProperties": False,
                  "properties": {k: {"type": "number", "minimum": lo, "maximum": hi} for k, (lo, hi) in TOLERANCE_RANGES.items()}}


def _default_tolerances() -> dict[str, dict[str, float]]:
    return {"float32": dict(_F32), "float64": dict(_F32), "bfloat16": dict(_HALF), "float16": dict(_HALF)}


@dataclass(frozen=True)
class NumericsSettings:
    """The fixed prompts, how many tokens the reference continues each with, top-k, the
    concurrency of the scoring passes and of the reference's noise-floor pass, how far the noise
    loosens a limit (`noise_multiplier`) and how far at most (`max_noise_loosening` × the policy's
    tolerance: a reference noisier than that makes the check "reference unstable", not judged,
    rather than a limit that cannot fail), and the tolerances per candidate dtype (float32 is the
    fallback for a dtype without its own row)."""

    prompts: list[str] = setting(factory=lambda: list(DEFAULT_PROMPTS), minItems=1)
    max_new_tokens: int = setting(32, minimum=1, maximum=MAX_ANSWER_TOKENS)
    top_k: int = setting(5, minimum=1, maximum=100)
    concurrency: int = setting(4, minimum=1, maximum=MAX_CONCURRENCY)
    noise_floor_concurrency: int = setting(1, minimum=1, maximum=MAX_CONCURRENCY,
                                           description="gate 2's limits are never tighter than the measured noise floor")
    noise_multiplier: float = setting(2.0, minimum=1, maximum=100)
    max_noise_loosening: float = setting(10.0, minimum=1, maximum=1000)
    tolerances: dict[str, dict[str, Any]] = setting(factory=_default_tolerances, additionalProperties=_TOLERANCE_ROW)

    def __post_init__(self) -> None:
        check_ranges(self)
        require("float32" in self.tolerances, "tolerances", "needs a float32 row (the fallback for other dtypes)")

    def tolerance(self, dtype: str) -> dict[str, float]:
        """The tolerance row for the candidate's dtype (float32's when it has none)."""
        return dict(self.tolerances.get(dtype) or self.tolerances["float32"])
