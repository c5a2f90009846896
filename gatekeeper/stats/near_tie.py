"""Near-tie divergences: is a candidate's different greedy answer a regression or noise?

Greedy decoding amplifies a tiny numerical difference into a different text when two tokens are
almost equally likely: bf16 rounding, another batch, another kernel. vLLM's own engine tests
(`check_logprobs_close`) accept such a divergence when each side's token is in the other's top-k.
Here, where the candidate's answer first differs from the reference's, both are asked again with
their top-k logprobs; the divergence is a near tie — noise, not a regression — when each chosen
token is in the other's top-k and either
- both logprob gaps are within the candidate dtype's near-tie gap (each side nearly indifferent), or
- each of the two contested tokens' logprobs moved between the sides by no more than the dtype's
  drift: the largest per-token move gate 2 accepts for that dtype anywhere (`max_abs_delta`,
  1.5 nats for bf16/fp16, 0.01 for fp32). Deep in a long prompt, bf16 moves a logprob by a nat
  where fp32 moves it by a thousandth: a divergence whose numbers gate 2 would pass is the
  precision the user declared, not a bug. A fault moves them further (or out of the top-k).
  Not gate 2's p99 (0.8 for bf16): a divergence is the one token where two answers are closest to
  parting, a tail event by selection, and measured bf16 divergences moved 0.97 and 1.17 nats (gate
  4's long tool prompts, seeds 4 and 9); at 0.8 a clean declared-bf16 build ROLLBACKed (seed 9,
  `longctx.tool_calls`, 2026-12-05). Gate 2 bounds the share of tokens beyond its p99; here that
  share is the near-tie *rate*, which gate 5 judges (`near_tie`).
Each near tie is forgiven on its own; where they are counted (gate 5's `near_tie` measure) their
rate is judged against the reference's own, and a task the candidate fails where the reference
succeeds is never forgiven as a near tie (gate 4: undecided at most).
Without logprobs (the probe found none), nothing is downgraded: the comparison stays exact.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gatekeeper.endpoints.responses import ChatResponse, TokenLogprob


# The default near-tie gap per candidate dtype, in nats: rounding alone moves a bf16/fp16 logprob
# by about a nat (gate 2's half-precision tolerance is 1.5), fp32 hardly at all.
DEFAULT_GAPS = {"float32": 0.05, "float64": 0.05, "bfloat16": 1.0, "float16": 1.0}


# The default drift per candidate dtype, in nats: gate 2's per-token `max_abs_delta` defaults
# (gates/numerics/settings.py; a test holds them equal).
DEFAULT_DRIFTS = {"float32": 0.01, "float64": 0.01, "bfloat16": 1.5, "float16": 1.5}


def valid_gaps(gaps: dict[str, float]) -> bool:
    """Whether a policy's gap table has a float32 row (the fallback) and only non-negative numbers."""
    return "float32" in gaps and all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in gaps.values())


def gap_for(gaps: dict[str, float], dtype: str) -> float:
    """The gap (or drift) for the candidate's dtype (float32's when the table has none)."""
    return float(gaps.get(dtype, gaps["float32"]))


@dataclass(frozen=True)
class Divergence:
    """Where two greedy answers first differ, token by token, and whether it is a near tie."""

    index: int  # first differing token
    reference: TokenLogprob
    candidate: TokenLogprob
    reference_gap: float | None  # the reference's logprob of its token minus of the candidate's (None: not in its top-k)
    candidate_gap: float | None
    tie: bool
    drift: float | None = None  # the larger move of the two contested tokens' logprobs between the sides

    def describe(self) -> str:
        """One line for a check's reason."""
        def gap(g: float | None) -> str:
            return "not in its top-k" if g is None else f"gap {g:.3g}"
        return (f"first divergence at token {self.index}: reference {self.reference.token!r} ({gap(self.reference_gap)}), "
                f"candidate {self.candidate.token!r} ({gap(self.candidate_gap)})"
                + (f", logprobs moved by at most {self.drift:.3g}" if self.drift is not None else ""))

    def cells(self) -> tuple[str, ...]:
        """The divergence as table cells (see `DIVERGENCE_COLUMNS`): the token index, each side's
        token with its logprob, its top alternatives, and the gaps."""
        return (str(self.index), _token_cell(self.reference), _token_cell(self.candidate), _top_cell(self.reference),
                _top_cell(self.candidate), _gap_cell(self.reference_gap), _gap_cell(self.candidate_gap),
                _gap_cell(self.drift))


DIVERGENCE_COLUMNS = ("token", "reference", "candidate", "reference top-k", "candidate top-k", "reference gap",
                      "candidate gap", "drift")
"""The columns of `Divergence.cells`; a gap is how much more likely the side's own token was than
the other side's, in nats ("not in top-k" where the other's token is not among its alternatives);
the drift is how far the two contested tokens' logprobs moved between the sides, the larger move."""


def first_divergence(reference: ChatResponse, candidate: ChatResponse, max_gap: float,
                     max_drift: float = 0.0) -> Divergence | None:
    """The first token where the two answers differ (None when their tokens agree throughout or
    either has no logprobs), judged as a near tie against `max_gap` and `max_drift` nats."""
    ref, cand = reference.logprobs or (), candidate.logprobs or ()
    for i, (r, c) in enumerate(zip(ref, cand)):
        if r.token != c.token:
            return judge(i, r, c, max_gap, max_drift)
    return None


def judge(index: int, r: TokenLogprob, c: TokenLogprob, max_gap: float, max_drift: float = 0.0) -> Divergence:
    """One position where the two sides chose different tokens (`r`, `c`: each side's chosen token
    with its top alternatives), judged as a near tie against `max_gap` and `max_drift` nats."""
    r_gap = _gap(r, c.token)
    c_gap = _gap(c, r.token)
    drift = _drift(r, c)
    tie = r_gap is not None and c_gap is not None and (
        (r_gap <= max_gap and c_gap <= max_gap) or (drift is not None and drift <= max_drift))
    return Divergence(index, r, c, r_gap, c_gap, tie, drift)


def _drift(r: TokenLogprob, c: TokenLogprob) -> float | None:
    """How far each side's chosen token's logprob moved to the other side, the larger of the two
    (None when either is not in the other's top-k or a logprob is missing)."""
    mine, theirs = r.token, c.token
    if r.logprob is None or c.logprob is None or mine not in c.top or theirs not in r.top:
        return None
    a, b = c.top[mine], r.top[theirs]
    if a is None or b is None:
        return None
    return max(abs(r.logprob - a), abs(c.logprob - b))


def same_tokens(reference: ChatResponse, candidate: ChatResponse) -> bool:
    """Whether two answers carry logprobs for the same generated tokens, one for one, and each
    answer's text and tool calls are drawn from those tokens: the same generation, however each
    server rendered it (a tool-call parser that keeps a malformed call as text or extracts part
    of it, special tokens shown or skipped). An answer with text its tokens do not contain (a
    detokenizer or a proxy that changes what was generated) is not a rendering of them."""
    ref, cand = reference.logprobs or (), candidate.logprobs or ()
    return (bool(ref) and len(ref) == len(cand) and all(r.token == c.token for r, c in zip(ref, cand))
            and drawn_from_tokens(reference) and drawn_from_tokens(candidate))


def _letters(text: str) -> str:
    """ASCII letters and digits only: what survives any renderer's whitespace, quoting, JSON
    escaping and partial-UTF-8 token strings alike."""
    return "".join(ch for ch in text if ch.isascii() and ch.isalnum())


def _within(piece: str, generated: str) -> bool:
    """Whether `piece` is a subsequence of `generated`: what is left of the generated text after a
    renderer cut parts out (a parser that lifts a valid call out of the middle of malformed text,
    special tokens skipped), in order, and nothing added."""
    rest = iter(generated)
    return all(ch in rest for ch in piece)


def drawn_from_tokens(answer: ChatResponse) -> bool:
    """Whether the answer's text, each tool call's name and each call's arguments are drawn
    (letters and digits, in order) from the tokens its logprobs say were generated."""
    generated = _letters("".join(t.token for t in answer.logprobs or ()))
    pieces = [answer.text, *(c.name for c in answer.tool_calls), *(c.arguments for c in answer.tool_calls)]
    return all(_within(_letters(piece), generated) for piece in pieces)


def asked_again(reference: ChatResponse, candidate: ChatResponse, max_gap: float, repeated: bool,
                max_drift: float = 0.0) -> str | None:
    """The one rule for two answers that differed, asked again of both with logprobs: "near tie"
    when they part at a near tie; "same tokens" when they carry the same tokens and each server
    `repeated` its first answer exactly (one generation, rendered differently); None otherwise
    (a confident divergence, or an answer that changed when asked again: the difference stands)."""
    d = first_divergence(reference, candidate, max_gap, max_drift)
    if d is not None and d.tie:
        return "near tie"
    if d is None and repeated and same_tokens(reference, candidate):
        return "same tokens"
    return None


def _token_cell(t: TokenLogprob) -> str:
    return f"{t.token!r} ({_num(t.logprob)})"


def _top_cell(t: TokenLogprob) -> str:
    ranked = sorted(t.top.items(), key=lambda kv: -kv[1] if kv[1] is not None else math.inf)
    return ", ".join(f"{tok!r} {_num(lp)}" for tok, lp in ranked)


def _num(x: float | None) -> str:
    return "?" if x is None else f"{x:.3f}"


def _gap_cell(g: float | None) -> str:
    return "not in top-k" if g is None else f"{g:.3f}"


def _gap(chosen: TokenLogprob, other: str) -> float | None:
    """How much more likely the chosen token was than `other` at this position (None when
    `other` is not in the position's top-k or a logprob is missing)."""
    if chosen.logprob is None or other not in chosen.top or chosen.top[other] is None:
        return None
    return max(0.0, chosen.logprob - chosen.top[other])
