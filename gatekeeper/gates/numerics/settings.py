"""Gate 2's settings, defaults and per-dtype tolerances (the `numerics:` section of a policy)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gatekeeper.config.settings import require

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

    prompts: list[str] = field(default_factory=lambda: list(DEFAULT_PROMPTS))
    max_new_tokens: int = 32
    top_k: int = 5
    concurrency: int = 4
    noise_floor_concurrency: int = 1
    noise_multiplier: float = 2.0
    max_noise_loosening: float = 10.0
    tolerances: dict[str, dict[str, Any]] = field(default_factory=_default_tolerances)

    def __post_init__(self) -> None:
        require(all(isinstance(p, str) for p in self.prompts), "prompts", "must be a list of strings")
        require(self.max_new_tokens > 0, "max_new_tokens", "must be at least 1")
        require(self.top_k > 0, "top_k", "must be at least 1")
        require(self.concurrency > 0, "concurrency", "must be at least 1")
        require(len(self.prompts) > 0, "prompts", "must name at least one prompt")
        require(self.noise_multiplier >= 1.0, "noise_multiplier", "must be at least 1")
        require(self.max_noise_loosening >= 1.0, "max_noise_loosening", "must be at least 1")
        require(self.noise_floor_concurrency > 0, "noise_floor_concurrency",
                "must be at least 1: gate 2's limits are never tighter than the measured noise floor")
        require("float32" in self.tolerances, "tolerances", "needs a float32 row (the fallback for other dtypes)")
        for dtype, row in self.tolerances.items():
            missing = [k for k in TOLERANCE_KEYS if not isinstance(row, dict) or k not in row]
            require(not missing, "tolerances", f"{dtype}: missing {', '.join(missing)}")

    def tolerance(self, dtype: str) -> dict[str, float]:
        """The tolerance row for the candidate's dtype (float32's when it has none)."""
        return dict(self.tolerances.get(dtype) or self.tolerances["float32"])
