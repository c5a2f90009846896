"""Turning last-position logits into next tokens and the logprobs a request asked for.

Logprobs are read from the raw distribution (log_softmax of the logits, before temperature,
top-k, top-p, min-token or grammar masking), as vLLM's default `raw_logprobs` mode reports them.

A sequence with a grammar matcher has every token its grammar does not allow next masked to
−inf (one bitmask row per constrained sequence, `engine/grammar.py`), and the chosen token is
fed back to its matcher. A matcher that rejects a token (only a misapplied mask lets one through)
is in its error state from then on and constrains nothing more.
"""

from __future__ import annotations

import torch

from gatekeeper.engine.grammar import allowed_mask
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


def _grammar_mask(masked: torch.Tensor, seqs: list[Sequence], misalign: bool) -> list[int]:
    """Mask, in place, what each constrained sequence's grammar forbids; returns their rows.
    `misalign` is the `grammar-mask-misalign` fault: the masks go to rows 0..C-1 (their packed
    order), which is right only when the constrained sequences lead the batch."""
    rows = [i for i, s in enumerate(seqs) if s.matcher is not None and not s.matcher.is_error()]
    if rows:
        allowed = allowed_mask([seqs[i].matcher for i in rows], masked.shape[-1])  # [C, V]
        targets = list(range(len(rows))) if misalign else rows
        masked[targets] = masked[targets].masked_fill(~allowed, float("-inf"))
    return rows


def sample(logits: torch.Tensor, seqs: list[Sequence], banned: list[int],
           misalign_grammar: bool = False, close_call_shift: float = 0.0) -> tuple[list[int], list[TokenLogprob | None]]:
    """Next token and its logprob record for each row of logits [S, V] (fp32).

    `banned` ids (EOS and stop tokens) are masked for sequences still short of `min_tokens`;
    constrained sequences are masked by their grammars (`misalign_grammar`: the fault);
    `close_call_shift` (the fault, nats) is added to each row's runner-up logit.
    """
    logits = logits.float()
    if close_call_shift:
        logits = logits.clone()
        rows = torch.arange(logits.shape[0])
        logits[rows, logits.topk(2, dim=-1).indices[:, 1]] += close_call_shift
    logprobs = torch.log_softmax(logits, dim=-1)  # [S, V], raw distribution
    masked = logits
    short = [i for i, s in enumerate(seqs) if s.num_output_tokens < s.params.min_tokens]
    constrained = any(s.matcher is not None for s in seqs)
    if short or constrained:
        masked = logits.clone()
        for i in short:
            masked[i, banned + list(seqs[i].params.stop_token_ids)] = float("-inf")
    grammar_rows = _grammar_mask(masked, seqs, misalign_grammar) if constrained else []
    greedy_ids = masked.argmax(dim=-1).tolist()
    tokens: list[int] = []
    records: list[TokenLogprob | None] = []
    for i, seq in enumerate(seqs):
        tid = greedy_ids[i] if seq.params.is_greedy else _sample_row(masked[i], seq)
        tokens.append(tid)
        k = seq.params.logprobs
        records.append(None if k is None else token_logprob(logprobs[i], tid, k))
    for i in grammar_rows:
        seqs[i].matcher.consume_token(tokens[i])  # False (and the error state) for a forbidden token
    return tokens, records
