"""Gate 5's token review: is a replayed answer that differs from the reference's a different
generation, or the same one rendered differently?

Two servers can render one generation differently: vLLM's Hermes parser returns a reply holding
one malformed call wholly as text, where the bundled engine's extracts the calls that parse; with
tools offered vLLM shows special tokens its detokenizer would otherwise skip. And a greedy answer
can part from the reference's at a near tie (another batch, another kernel). Counting either as a
disagreement rolls back a healthy build. So a greedy chat request whose candidate answer differs
from the reference's is asked of both again, non-streamed, with top-k logprobs (gate 4's review):

- the same tokens, one for one, and each server repeating its own first answer exactly: the same
  generation, rendered differently: not a disagreement (nor a finish-reason or tool-parse change);
- a first differing token inside the other side's top-k within the dtype's near-tie gap: noise,
  not a disagreement;
- anything else (a confident divergence, an answer that changes when asked again, a failed
  request, no logprobs): the disagreement stands.

Stored pairs (`--shadow-store`) are not reviewed: the targets may not be up.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gatekeeper.client import Endpoint
from gatekeeper.errors import EndpointError
from gatekeeper.fanout import fan_out
from gatekeeper.gates.interface import GateContext
from gatekeeper.gates.shadow.answers import Answer, answer_of
from gatekeeper.gates.shadow.measures import NEAR_TIE, SAME_TOKENS
from gatekeeper.gates.shadow.replay import capped_max_tokens, request_extra
from gatekeeper.near_tie import DEFAULT_GAPS, asked_again, gap_for
from gatekeeper.responses import ChatResponse
from gatekeeper.traffic.format import TrafficRecord

TOP_K = 5


def reviewable(ctx: GateContext) -> str | None:
    """Why no review can run (a target returns no logprobs), or None."""
    missing = [r for r in ("reference", "candidate") if not ctx.capabilities[r].logprobs]
    return f"the {' and '.join(missing)} returns no logprobs" if missing else None


def review(ctx: GateContext, records: Sequence[TrafficRecord], cand: Sequence[Answer], ref: Sequence[Answer],
           differs: Sequence[int], max_tokens_cap: int, concurrency: int) -> dict[int, str]:
    """For each index in `differs` (greedy chat requests whose answers differ), why the difference
    is not a disagreement; indices absent from the result stand as disagreements."""
    picked = [i for i in differs if records[i].endpoint == "chat" and not records[i].sampled]
    if not picked or reviewable(ctx) is not None:
        return {}
    k = min(TOP_K, ctx.capabilities["reference"].top_logprobs_max or TOP_K,
            ctx.capabilities["candidate"].top_logprobs_max or TOP_K)
    gap = gap_for(DEFAULT_GAPS, ctx.runtimes["candidate"].dtype if "candidate" in ctx.runtimes else "float32")

    def again(ep: Endpoint) -> list[ChatResponse | EndpointError]:
        return fan_out(lambda i: _ask(ep, records[i], max_tokens_cap, k), picked, concurrency)

    out: dict[int, str] = {}
    for i, r, c in zip(picked, again(ctx.reference), again(ctx.candidate)):
        if not isinstance(r, ChatResponse) or not isinstance(c, ChatResponse):
            continue
        why = asked_again(r, c, gap, _same(answer_of(r), ref[i]) and _same(answer_of(c), cand[i]))
        if why is not None:
            out[i] = NEAR_TIE if why == "near tie" else SAME_TOKENS
    return out


def _ask(ep: Endpoint, record: TrafficRecord, max_tokens_cap: int, k: int) -> ChatResponse | EndpointError:
    req: dict[str, Any] = record.request
    extra = {key: v for key, v in request_extra(req).items() if key not in ("logprobs", "top_logprobs")}
    try:
        return ep.chat(req["messages"], max_tokens=capped_max_tokens(req, max_tokens_cap), temperature=0.0,
                       tools=req.get("tools"), tool_choice=req.get("tool_choice"), logprobs=True, top_logprobs=k,
                       extra=extra)
    except EndpointError as e:  # fan_out's rule: a failure is this item's answer
        return e


def _same(a: Answer, b: Answer) -> bool:
    """A server repeated its first answer: the same text, calls and finish reason."""
    return (a.text, a.calls, a.finish_reason) == (b.text, b.calls, b.finish_reason)
