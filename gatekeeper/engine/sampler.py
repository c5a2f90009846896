"""Turning last-position logits into next tokens and the logprobs a request asked for.

Logprobs are read from the raw distribution (log_softmax of the logits, before temperature,
top-k, top-p or min-token masking), as vLLM's default `raw_logprobs` mode reports them.
"""

from __future__ import annotations

import torch

from gatekeeper.engine.outputs import TokenLogprob
from gatekeeper.engine.sequence import Sequence


def token_logprob(logprobs: torch.Tensor, token_id: int, k: int) -> TokenLogprob:
    """The logprob, rank and top-k of `token_id` in one row of logprobs [V]."""
    lp = logprobs[token_id]
    rank = int((logprobs > lp).sum().item()) + 1
    top: tuple[tuple[int, float], ...] = ()
    if k > 0:
        vals, ids = logprobs.topk(k)
        top = tuple(zip(ids.tolist(), vals.tolist()))
    return TokenLogprob(token_id, float(lp.item()), rank, top)


def prompt_logprobs(logprobs: torch.Tensor, token_ids: list[int], k: int) -> list[TokenLogprob | None]:
    """Logprobs of each prompt token given its prefix; logprobs [T, V] at positions 0..T-1."""
    out: list[TokenLogprob | None] = [None]
    for pos in range(1, len(token_ids)):
        out.append(token_logprob(logprobs[pos - 1], token_ids[pos], k))
    return out


def _sample_row(logits: torch.Tensor, seq: Sequence) -> int:
    """Sample one token from logits [V] under the sequence's temperature/top-k/top-p."""
    p = seq.params
    logits = logits / p.temperature
    if p.top_k > 0 and p.top_k < logits.shape[-1]:
        kth = logits.topk(p.top_k).values[-1]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits, dim=-1)
    if p.top_p < 1.0:
        sorted_probs, order = probs.sort(descending=True)
        keep = sorted_probs.cumsum(-1) - sorted_probs < p.top_p
        keep[0] = True  # a tiny top_p rounds to 0 in fp32; the top token must always stay
        sorted_probs = sorted_probs * keep
        probs = torch.zeros_like(probs).scatter(-1, order, sorted_probs)
    return int(torch.multinomial(probs, 1, generator=seq.generator).item())


def sample(logits: torch.Tensor, seqs: list[Sequence], banned: list[int]) -> tuple[list[int], list[TokenLogprob | None]]:
    """Next token and its logprob record for each row of logits [S, V] (fp32).

    `banned` ids (EOS and stop tokens) are masked for sequences still short of `min_tokens`.
    """
    logits = logits.float()
    logprobs = torch.log_softmax(logits, dim=-1)  # [S, V], raw distribution
    masked = logits
    short = [i for i, s in enumerate(seqs) if s.num_output_tokens < s.params.min_tokens]
    if short:
        masked = logits.clone()
        for i in short:
            masked[i, banned + list(seqs[i].params.stop_token_ids)] = float("-inf")
    greedy_ids = masked.argmax(dim=-1).tolist()
    tokens: list[int] = []
    records: list[TokenLogprob | None] = []
    for i, seq in enumerate(seqs):
        tid = greedy_ids[i] if seq.params.is_greedy else _sample_row(masked[i], seq)
        tokens.append(tid)
        k = seq.params.logprobs
        records.append(None if k is None else token_logprob(logprobs[i], tid, k))
    return tokens, records
