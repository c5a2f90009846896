"""Gate 4's settings and defaults (the `longctx:` section of a policy). Lengths are prompt tokens,
counted with /tokenize where a target has it."""

from __future__ import annotations

from dataclasses import dataclass, field

from gatekeeper.config.settings import require
from gatekeeper.gates.longctx.decay import one_cell_effect
from gatekeeper.near_tie import DEFAULT_GAPS, gap_for, valid_gaps


@dataclass(frozen=True)
class LongContextSettings:
    """Every family's sizes and limits.

    General: `block_size` (the candidate's KV block size, vLLM's --block-size; 0: the one the candidate
    states in `/metrics` or its log, else 16), `context_tokens`
    (0: the smaller max_model_len the targets report), `answer_tokens`, `concurrency`,
    `noise_floor_concurrency` (the reference's second pass over the grid, sweep and prefix
    prompts; 0 turns it off). Needle grid: `needle_lengths` × `needle_depths`,
    `needle_max_regressions`. Block boundaries: `boundary_tokens` (each rounded to B·k, sent at
    B·k−1, B·k, B·k+1), `boundary_max_mismatches`. Prefix cache: `prefix_tokens`,
    `prefix_suffixes`, `prefix_unrelated`, `prefix_max_mismatches`. Tools and JSON: `tool_cases`,
    `tool_history_tokens`, `tool_answer_tokens`, `json_cases`, `json_history_tokens`. Session
    decay (seed 000): `decay_sessions` sessions of `decay_rounds` rounds at `decay_concurrency`,
    `decay_facts` facts each, `decay_growth` tokens added per round in turn;
    `decay_max_excess_slope` (pass rate per round: how much faster, as a mean per-session slope,
    the candidate may lose recall than the reference), `recall_max_drop` (how much less, as a
    mean per-session share of rounds, it may recall), both larger than what one (session, round)
    cell can move; `decay_alpha` (the family-wise false-alarm rate of those two statistical
    checks: permutation tests over sessions, Holm-adjusted), `decay_min_recall` (below this
    reference recall at round 1 decay is not measurable), `max_disagreement` (share of identical
    session requests answered differently). `near_tie_gap` (nats per candidate dtype, float32 the fallback) and
    `near_tie_max_reviews`: session answers that differ from the reference's are asked again with
    logprobs, and a divergence at a near tie is noise, not a disagreement.
    """

    block_size: int = 0
    context_tokens: int = 0
    answer_tokens: int = 16
    concurrency: int = 4
    noise_floor_concurrency: int = 1
    needle_lengths: list[int] = field(default_factory=lambda: [256, 512, 1024, 1536, 2000])
    needle_depths: list[float] = field(default_factory=lambda: [0.0, 0.25, 0.5, 0.75, 1.0])
    needle_max_regressions: int = 0
    boundary_tokens: list[int] = field(default_factory=lambda: [256, 1024, 2000])
    boundary_max_mismatches: int = 0
    prefix_tokens: int = 1536
    prefix_suffixes: int = 5
    prefix_unrelated: int = 6
    prefix_max_mismatches: int = 0
    tool_cases: int = 6
    tool_history_tokens: int = 400
    tool_answer_tokens: int = 128
    json_cases: int = 3
    json_history_tokens: int = 800
    decay_sessions: int = 12
    decay_rounds: int = 12
    decay_concurrency: int = 12
    decay_facts: int = 3
    decay_growth: list[int] = field(default_factory=lambda: [100, 5, 200])
    decay_max_excess_slope: float = 0.005
    recall_max_drop: float = 0.05
    decay_alpha: float = 0.01
    decay_min_recall: float = 0.5
    max_disagreement: float = 0.05
    near_tie_gap: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_GAPS))
    near_tie_max_reviews: int = 32

    def __post_init__(self) -> None:
        require(self.block_size >= 0, "block_size", "must be 0 (the candidate's stated block size) or a token count")
        require(self.context_tokens >= 0, "context_tokens", "must be 0 (ask the targets) or a token count")
        require(self.answer_tokens > 0, "answer_tokens", "must be at least 1")
        require(self.concurrency > 0, "concurrency", "must be at least 1")
        require(self.noise_floor_concurrency >= 0, "noise_floor_concurrency", "must be 0 (off) or a concurrency")
        for key in ("needle_lengths", "boundary_tokens", "decay_growth"):
            values = getattr(self, key)
            require(all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values), key,
                    "must be a list of non-negative integers")
        require(all(isinstance(d, (int, float)) and 0.0 <= d <= 1.0 for d in self.needle_depths), "needle_depths",
                "must be a list of depths between 0 and 1")
        require(0.0 < self.decay_alpha < 1.0, "decay_alpha", "must be between 0 and 1")
        # An empty family would "pass" having judged nothing: every family needs something to judge.
        for key in ("needle_lengths", "needle_depths", "boundary_tokens", "decay_growth"):
            require(len(getattr(self, key)) > 0, key, "must not be empty (an empty list would pass having judged nothing)")
        for key in ("prefix_suffixes", "tool_cases", "json_cases", "decay_sessions", "decay_facts", "decay_concurrency"):
            require(getattr(self, key) >= 1, key, "must be at least 1 (0 would pass having judged nothing)")
        require(self.decay_rounds >= 2, "decay_rounds", "must be at least 2: decay is measured between rounds")
        require(valid_gaps(self.near_tie_gap), "near_tie_gap", "must map dtypes (float32 at least) to non-negative gaps in nats")
        require(self.near_tie_max_reviews >= 0, "near_tie_max_reviews", "must be 0 or more")
        # The permutation test's smallest p over S sessions is 1/2^S; Holm doubles the smaller of the two.
        require(2 * 0.5 ** self.decay_sessions < self.decay_alpha, "decay_sessions",
                f"{self.decay_sessions} sessions cannot show decay beyond chance at decay_alpha {self.decay_alpha:g} "
                f"(the smallest p of a permutation over them, Holm-adjusted, is {2 * 0.5 ** self.decay_sessions:.3g}): "
                f"use more sessions or a larger decay_alpha")
        for key, one in (("decay_max_excess_slope", one_cell_effect(self.decay_rounds, self.decay_sessions)),
                         ("recall_max_drop", 1 / (self.decay_rounds * self.decay_sessions))):
            require(getattr(self, key) > one, key,
                    f"must be above {one:.4g}, the most one (session, round) cell can move it with "
                    f"{self.decay_sessions} sessions of {self.decay_rounds} rounds (one unlucky answer would cross it)")

    def gap(self, dtype: str) -> float:
        """The near-tie gap for the candidate's dtype (float32's when it has none)."""
        return gap_for(self.near_tie_gap, dtype)
