"""Gate 4's settings and defaults (the `longctx:` section of a policy). Lengths are prompt tokens,
counted with /tokenize where a target has it."""

from __future__ import annotations

from dataclasses import dataclass

from gatekeeper.config.settings import (MAX_ANSWER_TOKENS, MAX_CASES, MAX_CONCURRENCY, MAX_CONTEXT_TOKENS, MAX_GAP_NATS,
                                        check_ranges, require, setting)
from gatekeeper.gates.longctx.decay import one_cell_effect
from gatekeeper.stats.near_tie import DEFAULT_DRIFTS, DEFAULT_GAPS, gap_for, valid_gaps


@dataclass(frozen=True)
class LongContextSettings:
    """Every family's sizes and limits.

    General: `block_size` (the candidate's KV block size, vLLM's --block-size; 0: the one the candidate
    states in `/metrics` or its log, else 16), `context_tokens`
    (0: the smaller max_model_len the targets report), `answer_tokens`, `concurrency`,
    `noise_floor_concurrency` (the reference's second pass over the grid, sweep and prefix
    prompts; 0 turns it off). Needle grid: `needle_lengths` × `needle_depths`,
    `needle_max_regressions`, `needle_max_precision_flips` (cells the candidate misses at a near
    tie that follow the reference's answer when it is forced, `forced.py`: beyond this many the
    check is undecided). Block boundaries: `boundary_tokens` (each rounded to B·k, sent at
    B·k−1, B·k, B·k+1), `boundary_max_mismatches`. Prefix cache: `prefix_tokens`,
    `prefix_suffixes`, `prefix_unrelated`, `prefix_max_mismatches`. Request features in full batches
    (`batch_features.py`): `batch_features` (on: on fresh launches of both targets where one is
    launched from a command, else on the run's own, last in the gate), `batch_features_urls` (off:
    not where a target is a URL), `batch_tokens` (the scheduler's token budget, vLLM's
    --max-num-batched-tokens; 0: the context length), `batch_prompt_share`, `batch_fillers`. Tools and JSON: `tool_cases`,
    `tool_history_tokens`, `tool_answer_tokens`, `json_cases`, `json_history_tokens`,
    `tool_max_precision_flips` (tool, tool-result and JSON cases per check the candidate fails at
    a near tie that follow the reference's answer when it is forced: beyond this many the check is
    undecided). Session
    decay (docs/bug-classes.md#kv-cache-reuse): `decay_sessions` sessions of `decay_rounds` rounds
    at `decay_concurrency`, `decay_facts` facts each, `decay_growth` tokens added per round in turn;
    `decay_max_excess_slope` (pass rate per round: how much faster, as a mean per-session slope,
    the candidate may lose recall than the reference), `recall_max_drop` (how much less, as a
    mean per-session share of rounds, it may recall), both larger than what one (session, round)
    cell can move; `decay_alpha` (the family-wise false-alarm rate of those two statistical
    checks: permutation tests over sessions, Holm-adjusted), `decay_min_recall` (below this
    reference recall at round 1 decay is not measurable), `max_disagreement` (share of identical
    session requests answered differently). `near_tie_gap`, `near_tie_drift` (nats per candidate
    dtype, float32 the fallback; `gatekeeper/stats/near_tie.py`) and `near_tie_max_reviews`: answers that
    differ from the reference's (sessions, needle cells, tool and JSON cases) are asked again with
    logprobs, and a divergence at a near tie is noise, not a disagreement.
    """

    block_size: int = setting(0, minimum=0, maximum=4096, description="0: the candidate's stated block size")
    context_tokens: int = setting(0, minimum=0, maximum=MAX_CONTEXT_TOKENS, description="0: ask the targets")
    answer_tokens: int = setting(16, minimum=1, maximum=MAX_ANSWER_TOKENS)
    concurrency: int = setting(4, minimum=1, maximum=MAX_CONCURRENCY)
    noise_floor_concurrency: int = setting(1, minimum=0, maximum=MAX_CONCURRENCY, description="0 turns the pass off")
    needle_lengths: list[int] = setting(factory=lambda: [256, 512, 1024, 1536, 2000],
                                        items={"minimum": 0, "maximum": MAX_CONTEXT_TOKENS})
    needle_depths: list[float] = setting(factory=lambda: [0.0, 0.25, 0.5, 0.75, 1.0], items={"minimum": 0, "maximum": 1})
    needle_max_regressions: int = setting(0, minimum=0, maximum=MAX_CASES)
    needle_max_precision_flips: int = setting(1, minimum=0, maximum=MAX_CASES,
                                              description="missed needles that follow the reference's answer when it is forced")
    boundary_tokens: list[int] = setting(factory=lambda: [256, 1024, 2000], items={"minimum": 0, "maximum": MAX_CONTEXT_TOKENS})
    boundary_max_mismatches: int = setting(0, minimum=0, maximum=MAX_CASES)
    prefix_tokens: int = setting(1536, minimum=1, maximum=MAX_CONTEXT_TOKENS)
    prefix_suffixes: int = setting(5, minimum=1, maximum=MAX_CASES, description="0 would pass having judged nothing")
    prefix_unrelated: int = setting(6, minimum=0, maximum=MAX_CASES)
    prefix_max_mismatches: int = setting(0, minimum=0, maximum=MAX_CASES)
    batch_features: bool = setting(True, description="request features alone and in full batches (batch_features.py)")
    batch_features_urls: bool = setting(False, description="also on URL targets, where a feature that kills an engine "
                                        "kills the server gatekeeper was pointed at")
    batch_tokens: int = setting(0, minimum=0, maximum=1 << 20, description="the scheduler's token budget; 0: the context length")
    batch_prompt_share: float = setting(0.9, minimum=0.05, maximum=1.0, description="each batch prompt's share of the context")
    batch_fillers: int = setting(2, minimum=1, maximum=MAX_CASES, description="prompts sent ahead of each feature request")
    tool_cases: int = setting(6, minimum=1, maximum=MAX_CASES, description="0 would pass having judged nothing")
    tool_history_tokens: int = setting(400, minimum=0, maximum=MAX_CONTEXT_TOKENS)
    tool_answer_tokens: int = setting(128, minimum=1, maximum=MAX_ANSWER_TOKENS)
    json_cases: int = setting(3, minimum=1, maximum=MAX_CASES, description="0 would pass having judged nothing")
    json_history_tokens: int = setting(800, minimum=0, maximum=MAX_CONTEXT_TOKENS)
    tool_max_precision_flips: int = setting(1, minimum=0, maximum=MAX_CASES,
                                            description="failed tool or JSON cases that follow the reference's answer when it is forced")
    decay_sessions: int = setting(12, minimum=1, maximum=MAX_CASES, description="0 would pass having judged nothing")
    decay_rounds: int = setting(12, minimum=2, maximum=MAX_CASES, description="decay is measured between rounds")
    decay_concurrency: int = setting(12, minimum=1, maximum=MAX_CONCURRENCY)
    decay_facts: int = setting(3, minimum=1, maximum=100, description="0 would pass having judged nothing")
    decay_growth: list[int] = setting(factory=lambda: [100, 5, 200], items={"minimum": 0, "maximum": MAX_CONTEXT_TOKENS})
    decay_max_excess_slope: float = setting(0.005, exclusiveMinimum=0, maximum=1)
    recall_max_drop: float = setting(0.05, exclusiveMinimum=0, maximum=1)
    decay_alpha: float = setting(0.01, exclusiveMinimum=0, exclusiveMaximum=1)
    decay_min_recall: float = setting(0.5, minimum=0, maximum=1)
    max_disagreement: float = setting(0.05, minimum=0, maximum=1)
    near_tie_gap: dict[str, float] = setting(factory=lambda: dict(DEFAULT_GAPS),
                                             additionalProperties={"minimum": 0, "maximum": MAX_GAP_NATS})
    near_tie_drift: dict[str, float] = setting(factory=lambda: dict(DEFAULT_DRIFTS),
                                               additionalProperties={"minimum": 0, "maximum": MAX_GAP_NATS})
    near_tie_max_reviews: int = setting(32, minimum=0, maximum=MAX_CASES)

    def __post_init__(self) -> None:
        check_ranges(self)
        # An empty family would "pass" having judged nothing: every family needs something to judge.
        for key in ("needle_lengths", "needle_depths", "boundary_tokens", "decay_growth"):
            require(len(getattr(self, key)) > 0, key, "must not be empty (an empty list would pass having judged nothing)")
        require(valid_gaps(self.near_tie_gap), "near_tie_gap", "must map dtypes (float32 at least) to non-negative gaps in nats")
        require(valid_gaps(self.near_tie_drift), "near_tie_drift",
                "must map dtypes (float32 at least) to non-negative logprob moves in nats")
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

    def drift(self, dtype: str) -> float:
        """The near-tie drift for the candidate's dtype (float32's when it has none)."""
        return gap_for(self.near_tie_drift, dtype)
