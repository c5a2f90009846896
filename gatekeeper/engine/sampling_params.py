"""Per-request sampling and scoring parameters, validated once at the HTTP edge."""

from __future__ import annotations

from dataclasses import dataclass, field

MAX_LOGPROBS = 20
"""Largest `top_logprobs` / `prompt_logprobs` a request may ask for (vLLM's default cap)."""


@dataclass(frozen=True)
class SamplingParams:
    """How one request is decoded and what it reports.

    `temperature == 0` is greedy. `logprobs` is the number of top alternatives reported per
    generated token (0 = only the chosen token's logprob, None = no logprobs); `prompt_logprobs`
    the same for prompt positions. Logprobs are always taken from the raw model distribution,
    before temperature, top-p/top-k or the grammar mask, as vLLM's default `raw_logprobs` mode does.
    """

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    seed: int | None = None
    max_tokens: int = 16
    min_tokens: int = 0
    stop: tuple[str, ...] = ()
    stop_token_ids: tuple[int, ...] = ()
    ignore_eos: bool = False
    logprobs: int | None = None
    prompt_logprobs: int | None = None
    skip_special_tokens: bool = True
    grammar: str | None = None  # an llguidance grammar the output must match (engine/grammar.py)
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def is_greedy(self) -> bool:
        """True when decoding takes the argmax token."""
        return self.temperature <= 0.0
