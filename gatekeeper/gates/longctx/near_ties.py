"""Gate 4's near-tie review: items where the candidate's greedy answer differs from the
reference's are asked again of both with top-k logprobs, and a divergence at a near tie (each
first differing token in the other's top-k within the dtype's `near_tie_gap`; see
`gatekeeper/near_tie.py`) is noise, not a disagreement. Asked again alone, an answer that no
longer differs is not forgiven: the difference came from the traffic around it (a cache bug
shows exactly so), so it stands.
"""

from __future__ import annotations

from typing import Any

from gatekeeper.client import Endpoint
from gatekeeper.errors import EndpointError
from gatekeeper.fanout import fan_out
from gatekeeper.gates.interface import GateContext
from gatekeeper.gates.longctx.settings import LongContextSettings
from gatekeeper.gates.longctx.tokens import Messages
from gatekeeper.near_tie import Divergence, first_divergence
from gatekeeper.responses import ChatResponse

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
    caps = ctx.capabilities
    if not items or unreviewable(ctx, s) is not None:
        return [None] * len(items)
    picked = list(zip(items, extra or [{}] * len(items)))[: s.near_tie_max_reviews]
    k = min(TOP_K, caps["reference"].top_logprobs_max or TOP_K, caps["candidate"].top_logprobs_max or TOP_K)

    def again(ep: Endpoint) -> list[ChatResponse | EndpointError]:
        return fan_out(lambda item: ep.chat(item[0], max_tokens=max_tokens, temperature=0.0, logprobs=True, top_logprobs=k,
                                            **item[1]), picked, s.concurrency)

    refs, cands = again(ctx.reference), again(ctx.candidate)
    out: list[tuple[ChatResponse, ChatResponse] | None] = [
        (ref, cand) if isinstance(ref, ChatResponse) and isinstance(cand, ChatResponse) else None
        for ref, cand in zip(refs, cands)]
    return out + [None] * (len(items) - len(picked))


def near_ties(ctx: GateContext, s: LongContextSettings, items: list[Messages], max_tokens: int,
              extra: list[dict[str, Any]] | None = None) -> list[Divergence | None]:
    """Per item: the near-tie divergence found when both targets answer it again with logprobs,
    or None (a confident divergence, no divergence at all, no logprobs, or a failed request).
    `extra` holds each item's further request fields (tools, tool_choice)."""
    gap = s.gap(ctx.runtimes["candidate"].dtype if "candidate" in ctx.runtimes else "float32")
    out: list[Divergence | None] = []
    for pair in reask(ctx, s, items, max_tokens, extra):
        d = first_divergence(*pair, gap) if pair is not None else None
        out.append(d if d is not None and d.tie else None)
    return out
