"""A request's life inside an engine core: its tokens, blocks, sampling state and stop rules."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from enum import Enum, auto
from typing import Any

import torch

from gatekeeper.engine.outputs import TokenLogprob
from gatekeeper.engine.sampling_params import SamplingParams

_seq_ids = itertools.count()


class SequenceStatus(Enum):
    """Where a sequence is in the scheduler."""

    WAITING = auto()
    RUNNING = auto()
    FINISHED = auto()


@dataclass(slots=True, eq=False)
class Sequence:
    """Per-step state of one request: prompt + generated tokens and the KV blocks holding them.

    `num_computed_tokens` counts tokens whose K/V is already in the cache (all but the newest
    token during decode); `num_cached_tokens` those a prefix-cache hit supplied on the latest
    allocation. `block_hashes` are the chained hashes of the full blocks registered so far.
    """

    request_id: str
    prompt_token_ids: list[int]
    params: SamplingParams
    seq_id: int = field(default_factory=lambda: next(_seq_ids))
    token_ids: list[int] = field(default_factory=list)
    status: SequenceStatus = SequenceStatus.WAITING
    block_table: list[int] = field(default_factory=list)
    block_hashes: list[int] = field(default_factory=list)
    num_computed_tokens: int = 0
    num_cached_tokens: int = 0
    prompt_logprobs_done: bool = False
    finish_reason: str | None = None
    stop_reason: int | str | None = None
    generator: torch.Generator | None = None
    matcher: Any = None  # the grammar's llguidance matcher while the output is constrained

    def __post_init__(self) -> None:
        if not self.token_ids:
            self.token_ids = list(self.prompt_token_ids)
        if self.params.seed is not None and not self.params.is_greedy:
            self.generator = torch.Generator().manual_seed(self.params.seed)

    def __len__(self) -> int:
        return len(self.token_ids)

    @property
    def num_prompt_tokens(self) -> int:
        """Tokens of the original prompt."""
        return len(self.prompt_token_ids)

    @property
    def num_output_tokens(self) -> int:
        """Tokens generated so far."""
        return len(self.token_ids) - len(self.prompt_token_ids)

    @property
    def wants_prompt_logprobs(self) -> bool:
        """True while this sequence still owes its prompt logprobs."""
        return self.params.prompt_logprobs is not None and not self.prompt_logprobs_done

    def block_token_ids(self, i: int, block_size: int) -> tuple[int, ...]:
        """Token ids that fall in logical block `i`."""
        return tuple(self.token_ids[i * block_size : (i + 1) * block_size])

    def num_blocks(self, block_size: int) -> int:
        """Blocks needed to hold every current token."""
        return (len(self.token_ids) + block_size - 1) // block_size


@dataclass(slots=True)
class StepOutput:
    """One new token of one sequence from one engine step."""

    seq: Sequence
    token_id: int
    logprob: TokenLogprob | None
    prompt_logprobs: list[TokenLogprob | None] | None = None


def check_stop(seq: Sequence, token_id: int, eos_token_ids: frozenset[int], max_model_len: int, honour_eos: bool = True) -> None:
    """Mark `seq` finished if `token_id` (already appended) ends it.

    EOS and stop tokens count only after `min_tokens`; `honour_eos=False` is the
    `eos-ignored` fault's path, which also ignores stop token ids.
    """
    p = seq.params
    if seq.num_output_tokens > p.min_tokens:
        if honour_eos and not p.ignore_eos and token_id in eos_token_ids:
            seq.finish_reason, seq.stop_reason = "stop", None
        elif honour_eos and token_id in p.stop_token_ids:
            seq.finish_reason, seq.stop_reason = "stop", token_id
    if seq.finish_reason is None and (seq.num_output_tokens >= p.max_tokens or len(seq) >= max_model_len):
        seq.finish_reason = "length"
    if seq.finish_reason is not None:
        seq.status = SequenceStatus.FINISHED
