"""Teacher-forcing the reference's answer: a task the candidate lost at a near tie, told apart as
a precision flip or a regression (gate 3's golden cases, gate 4's needle cells and its tool and
JSON cases).

Where the candidate fails a task the reference passes (misses a secret, answers 22 for 28) and the
two answers part at a near tie, one ask with logprobs cannot tell a declared bf16 build's rounding
from a bug that lowered the right token's logit by less than a nat. Forcing tells them apart: the chat prompt (the target's own
`/tokenize`, chat template and generation prompt applied) followed by the reference's answer is
scored on both targets (`/v1/completions`, `echo` with top-k logprobs, one token generated), so at
every answer position, and at the one after it (where the answer ends), each side's own greedy
choice is known given the reference's answer so far. Where the two choices differ, the position is
judged as any divergence is (`gatekeeper/stats/near_tie.judge`: both gaps within the dtype's gap,
or both logprobs moved by at most its drift). If every such position is a near tie, the candidate
would have given the reference's answer but for close calls: a **precision flip**. If at some
position the candidate confidently chooses otherwise, its own choices leave the secret even on the
reference's path: a **regression**.

A tool case is forced the same way: its prompt is rendered with its tools (`/tokenize` with
`tools`, as vLLM's chat tokenize and the bundled server accept) and the reference's answer is what
its model generated, tool-call markup included (`generated`: the answer's logprob tokens, which
spell the text before the server parsed the calls out of it). A case with a response format is
not forced: the format's grammar steers the decoding, which a forced plain prompt does not.

What forcing cannot see: the answer is scored as a prompt, so it runs the prefill path. A fault
only in the decode path (a sampler that shifts close calls, a decode kernel) leaves the forced
choices alone and reads as a precision flip; such a fault shifts many close calls, which the
rate of near ties shows (gate 5's `near_tie`), and each gate forgives at most a few flips (its
policy's `needle_max_precision_flips`, `max_precision_flips`) before it is undecided.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from gatekeeper.endpoints.chat_types import ChatMessage, ToolDefinition
from gatekeeper.endpoints.client import Endpoint
from gatekeeper.endpoints.responses import ChatResponse, CompletionResponse, TokenLogprob
from gatekeeper.errors import EndpointError
from gatekeeper.gates.interface import GateContext
from gatekeeper.stats.near_tie import Divergence, judge

NEEDS = ("tokenize", "completions", "echo", "logprobs")
TOP_K = 5
Messages = list[ChatMessage]


class NearTieSettings(Protocol):
    """A gate's near-tie thresholds per candidate dtype (its policy's `near_tie_gap`, `near_tie_drift`)."""

    def gap(self, dtype: str) -> float: ...

    def drift(self, dtype: str) -> float: ...


@dataclass(frozen=True, kw_only=True)
class Forced:
    """The reference's answer forced on both targets: how many positions were scored (the answer's
    tokens and the one after it) and where the two sides' own greedy choices part."""

    positions: int
    partings: tuple[Divergence, ...]

    @property
    def follows(self) -> bool:
        """Whether the candidate follows the reference's answer but for near ties (a precision flip)."""
        return all(d.tie for d in self.partings)

    def departure(self) -> Divergence | None:
        """The first position where the candidate confidently chooses otherwise (None: it follows)."""
        return next((d for d in self.partings if not d.tie), None)

    def describe(self) -> str:
        """One clause for a check's reason."""
        if not self.partings:
            return f"forced on the reference's answer, the candidate chooses the reference's token at all {self.positions} positions"
        d = self.departure()
        if d is None:
            return (f"forced on the reference's answer, the candidate parts from it at {len(self.partings)} of "
                    f"{self.positions} positions, each a near tie")
        return f"forced on the reference's answer, the candidate confidently leaves it: {d.describe()}"


def unforceable(ctx: GateContext) -> str | None:
    """Why forcing cannot run (a target lacks `/tokenize`, completions, echo or logprobs), or None."""
    caps = ctx.capabilities
    for role in ("reference", "candidate"):
        missing = [n for n in NEEDS if not getattr(caps[role], n)]
        if missing:
            return f"the {role} has no {', '.join(missing)}, so the reference's answer could not be forced on it"
    return None


def generated(answer: ChatResponse) -> str | None:
    """What the model generated for `answer`, spelled by the server's logprob tokens: tool-call
    markup included, which the parsed answer no longer shows, and the stop token that ended it
    (the last token of an answer that finished with "stop", as vLLM and the bundled engine
    report it) left out. An answer a stop string ended loses its last token as well (the one that
    completed the stop string, possibly with text before it), so what is forced is then a prefix
    of what the model generated: still the reference's own tokens, one fewer judged. None without
    logprobs."""
    tokens = answer.logprobs
    if not tokens:
        return None
    if answer.finish_reason == "stop":
        tokens = tokens[:-1]
    return "".join(t.token for t in tokens)


def force_in(ctx: GateContext, s: NearTieSettings, messages: Messages, answer: str,
             tools: Sequence[ToolDefinition] | None = None) -> Forced | str:
    """The reference's `answer` to `messages` (offered `tools`) forced on the run's two targets
    (top-k as both return, the candidate dtype's gap and drift), or why it could not be."""
    why = unforceable(ctx)
    if why is not None:
        return why
    k = ctx.shared_top_k(TOP_K)
    dtype = ctx.candidate_dtype()
    return force(ctx.reference, ctx.candidate, messages, answer, k=k, gap=s.gap(dtype), drift=s.drift(dtype), tools=tools)


def force(reference: Endpoint, candidate: Endpoint, messages: Messages, answer: str, *, k: int, gap: float,
          drift: float, tools: Sequence[ToolDefinition] | None = None) -> Forced | str:
    """`answer` (the reference's) to `messages` forced on both endpoints, the chat prompt rendered
    with `tools` when given; each position where their own greedy choices differ judged at `gap`
    and `drift` nats with top-`k` logprobs; or why it could not be (a failed request, logprobs
    missing, the two tokenizing differently)."""
    try:
        ref_ids, ref_shown, ref_tops = _scored(reference, messages, answer, k, tools)
        cand_ids, cand_shown, cand_tops = _scored(candidate, messages, answer, k, tools)
    except (EndpointError, ValueError) as e:
        return f"forcing the reference's answer failed: {e}"
    if ref_ids != cand_ids or ref_shown != cand_shown:
        return ("the two targets tokenize or render the prompt and answer differently, so their choices cannot be "
                "compared position by position")
    partings = tuple(judge(i, r, c, gap, drift) for i, (r, c) in enumerate(zip(ref_tops, cand_tops)) if r.token != c.token)
    return Forced(positions=len(ref_tops), partings=partings)


def _scored(ep: Endpoint, messages: Messages, answer: str, k: int,
            tools: Sequence[ToolDefinition] | None) -> tuple[list[int], tuple[str, ...], list[TokenLogprob]]:
    """The token ids of prompt (offered `tools`) and answer on `ep`, how the server renders them
    as token strings, and per answer position and the one after it the side's own greedy choice
    (its top-1) with its top-k (ValueError: logprobs missing)."""
    prompt = ep.tokenize(messages=messages, tools=tools)
    forced = ep.tokenize(text=answer)
    ids = prompt + forced
    resp: CompletionResponse = ep.completion(ids, max_tokens=1, temperature=0.0, echo=True, logprobs=k)
    tops = resp.top_logprobs[len(prompt): len(ids) + 1]
    if len(tops) != len(forced) + 1 or any(not t for t in tops):
        raise ValueError(f"{ep.role}: the echoed logprobs do not cover the forced answer ({len(tops)} of {len(forced) + 1} positions)")
    chosen = []
    for top in tops:
        assert top is not None  # checked above
        scored = {tok: lp for tok, lp in top.items() if lp is not None}
        best = max(scored, key=lambda tok: scored[tok])
        chosen.append(TokenLogprob(best, scored[best], dict(scored)))
    return ids, resp.tokens[: len(ids)], chosen
