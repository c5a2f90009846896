"""Gate 4's near-tie review: items where the candidate's greedy answer differs from the
reference's are asked again of both with top-k logprobs, and a divergence at a near tie (each
first differing token in the other's top-k within the dtype's `near_tie_gap` or
`near_tie_drift`; see `gatekeeper/stats/near_tie.py`) is noise, not a disagreement. Asked again alone, an answer that no
longer differs is not forgiven: the difference came from the traffic around it (a cache bug
shows exactly so), so it stands.
"""

from __future__ import annotations

from typing import Any

from gatekeeper.endpoints.client import Endpoint
from gatekeeper.errors import EndpointError
from gatekeeper.evidence import Table
from gatekeeper.endpoints.fanout import fan_out
from gatekeeper.gates.interface import GateContext
from gatekeeper.gates.longctx.settings import LongContextSettings
from gatekeeper.gates.longctx.tokens import Messages
from gatekeeper.stats.near_tie import DIVERGENCE_COLUMNS, Divergence, first_divergence
from gatekeeper.endpoints.responses import ChatResponse

TOP_K = 5


def unreviewable(ctx: GateContext, s: LongContextSettings) -> str | None:
    """Why the near-tie review cannot run (a target returns no logprobs, or the policy turns it
    off), or None: then differing answers are compared exactly, and a check should say so."""
    caps = ctx.capabilities
    missing = [r for r in ("reference", "candidate") if not caps[r].logprobs]
    if missing:
        return f"the near-tie review could not run: the {' and '.join(missing)} returns no logprobs, so answers compare exactly"
    if s.near_tie_max_reviews == 0:
        return "the near-tie review is off (near_tie_max_reviews: 0), so answers compare exactly"
    return None


def reask(ctx: GateContext, s: LongContextSettings, items: list[Messages], max_tokens: int,
          extra: list[dict[str, Any]] | None = None) -> list[tuple[ChatResponse, ChatResponse] | None]:
    """Per item: both targets' answers asked again, greedy, with top-k logprobs (None where the
    review cannot run, the item is past `near_tie_max_reviews`, or a request failed)."""
    if not items or unreviewable(ctx, s) is not None:
        return [None] * len(items)
    picked = list(zip(items, extra or [{}] * len(items)))[: s.near_tie_max_reviews]
    k = ctx.shared_top_k(TOP_K)

    def again(ep: Endpoint) -> list[ChatResponse | EndpointError]:
        return fan_out(lambda item: ep.chat(item[0], max_tokens=max_tokens, temperature=0.0, logprobs=True, top_logprobs=k,
                                            **item[1]), picked, s.concurrency)

    refs, cands = again(ctx.reference), again(ctx.candidate)
    out: list[tuple[ChatResponse, ChatResponse] | None] = [
        (ref, cand) if isinstance(ref, ChatResponse) and isinstance(cand, ChatResponse) else None
        for ref, cand in zip(refs, cands)]
    return out + [None] * (len(items) - len(picked))


def divergences(ctx: GateContext, s: LongContextSettings, items: list[Messages], max_tokens: int,
                extra: list[dict[str, Any]] | None = None) -> list[Divergence | None]:
    """Per item: where both targets' answers, asked again with logprobs, first part (a near tie
    or a confident divergence), or None (they no longer part, no logprobs, a failed request, or
    past `near_tie_max_reviews`). `extra` holds each item's further request fields (tools, tool_choice)."""
    dtype = ctx.candidate_dtype()
    gap, drift = s.gap(dtype), s.drift(dtype)
    return [first_divergence(*pair, gap, drift) if pair is not None else None
            for pair in reask(ctx, s, items, max_tokens, extra)]


def near_ties(ctx: GateContext, s: LongContextSettings, items: list[Messages], max_tokens: int,
              extra: list[dict[str, Any]] | None = None) -> list[Divergence | None]:
    """Per item: the near-tie divergence found when both targets answer it again with logprobs,
    or None (a confident divergence, no divergence at all, no logprobs, or a failed request)."""
    return [d if d is not None and d.tie else None for d in divergences(ctx, s, items, max_tokens, extra)]


def divergence_table(ctx: GateContext, s: LongContextSettings, what: str, found: dict[str, Divergence]) -> Table:
    """The evidence of a review: per item (named by `found`'s keys) where the answers asked again
    first part, each side's token, logprob and top alternatives, and whether that is a near tie."""
    dtype = ctx.candidate_dtype()
    return Table(f"{what} asked again of both with logprobs: where the answers first part (near tie: both gaps within "
                 f"{s.gap(dtype):g} nats, or both tokens' logprobs moved by at most {s.drift(dtype):g})",
                 [what.rstrip("s"), "near tie", *DIVERGENCE_COLUMNS],
                 [[name, "yes" if d.tie else "no", *d.cells()] for name, d in found.items()])
