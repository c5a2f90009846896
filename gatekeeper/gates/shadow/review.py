"""Gate 5's token review: is a replayed answer that differs from the reference's a different
generation, or the same one rendered differently?

Two servers can render one generation differently: vLLM's Hermes parser returns a reply holding
one malformed call wholly as text, where the bundled engine's extracts the calls that parse; with
tools offered vLLM shows special tokens its detokenizer would otherwise skip. And a greedy answer
can part from the reference's at a near tie (another batch, another kernel). Counting either as a
disagreement rolls back a healthy build. So a greedy chat request whose candidate answer differs
from the reference's is asked of both again, non-streamed, with top-k logprobs (gate 4's review).
The reference's own second answer (the twin, the noise floor) is reviewed by the same rule when it
differs from the reference's first: a near tie forgiven on one side only would make the twin
noisier than the candidate and hide a candidate's confident divergences behind it.

- the same tokens, one for one, and each server repeating its own first answer exactly: the same
  generation, rendered differently: not a disagreement (nor a finish-reason or tool-parse change);
- a first differing token inside the other side's top-k within the near-tie gap or drift of the
  candidate's declared dtype (the policy's `near_tie_gap`, `near_tie_drift`, as gates 3 and 4): noise, not a
  disagreement;
- anything else (a confident divergence, an answer that changes when asked again, a failed
  request, no logprobs): the disagreement stands. A confident divergence is kept with both
  sides' top tokens and logprobs at the first differing token, for the evidence of the
  `answers_differ` rule.

Stored pairs (`--shadow-store`) are not reviewed: the targets may not be up.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gatekeeper.endpoints.client import Endpoint
from gatekeeper.errors import EndpointError
from gatekeeper.endpoints.fanout import fan_out
from gatekeeper.gates.interface import GateContext
from gatekeeper.traffic.answers import Answer, answer_of
from gatekeeper.traffic.measures import NEAR_TIE, SAME_TOKENS
from gatekeeper.gates.shadow.replay import capped_max_tokens, request_extra
from gatekeeper.stats.near_tie import DIVERGENCE_COLUMNS, Divergence, asked_again, first_divergence
from gatekeeper.endpoints.responses import ChatResponse
from gatekeeper.traffic.format import TrafficRecord

TOP_K = 5


@dataclass(frozen=True)
class Review:
    """The token review of one differing answer. `forgiven`: why it is no disagreement
    (SAME_TOKENS or NEAR_TIE), None when the difference stands, `stands` then saying why;
    `divergence`: where the answers asked again first part, judged against `gap` and `drift` nats (None when
    their tokens do not part or a request failed)."""

    forgiven: str | None
    stands: str
    divergence: Divergence | None
    gap: float
    drift: float = 0.0

    def row(self, record: TrafficRecord) -> tuple[str, ...]:
        """A confident divergence as a table row: the request, the token, each side's token and
        logprob, its top alternatives, and the gaps (see `ROW_COLUMNS`)."""
        d = self.divergence
        assert d is not None
        return (record.id, record.tenant, *d.cells(), f"{self.gap:g}", f"{self.drift:g}")


ROW_COLUMNS = ("request", "tenant", *DIVERGENCE_COLUMNS, "near-tie gap", "near-tie drift")
"""The columns of `Review.row` (`near_tie.DIVERGENCE_COLUMNS` between the request and the limits)."""


def reviewable(ctx: GateContext) -> str | None:
    """Why no review can run (a target returns no logprobs), or None."""
    missing = [r for r in ("reference", "candidate") if not ctx.capabilities[r].logprobs]
    return f"the {' and '.join(missing)} returns no logprobs" if missing else None


def review(ctx: GateContext, records: Sequence[TrafficRecord], cand: Sequence[Answer], ref: Sequence[Answer],
           differs: Sequence[int], max_tokens_cap: int, concurrency: int, gap: float,
           drift: float = 0.0, other: Endpoint | None = None) -> dict[int, Review]:
    """The review of each index in `differs` (requests whose answers differ) that is a greedy chat
    request, `gap` and `drift` the near-tie limits in nats (`gatekeeper/stats/near_tie.py`);
    indices absent from the result were not reviewed (sampled, completions, or no logprobs) and
    stand as disagreements. `cand` are the answers of `other` (the candidate by default; the
    reference's twin is reviewed by the same rule, `other` then the server that gave it: the
    reference or its replica), each asked again beside the reference."""
    picked = [i for i in differs if records[i].endpoint == "chat" and not records[i].sampled]
    if not picked or reviewable(ctx) is not None:
        return {}
    k = ctx.shared_top_k(TOP_K)

    def again(ep: Endpoint) -> list[ChatResponse | EndpointError]:
        return fan_out(lambda i: _ask(ep, records[i], max_tokens_cap, k), picked, concurrency)

    out: dict[int, Review] = {}
    for i, r, c in zip(picked, again(ctx.reference), again(other or ctx.candidate)):
        if not isinstance(r, ChatResponse) or not isinstance(c, ChatResponse):
            out[i] = Review(None, "a request failed when asked again", None, gap, drift)
            continue
        d = first_divergence(r, c, gap, drift)
        why = asked_again(r, c, gap, _same(answer_of(r), ref[i]) and _same(answer_of(c), cand[i]), drift)
        if why is not None:
            out[i] = Review(NEAR_TIE if why == "near tie" else SAME_TOKENS, "", d, gap, drift)
        elif d is not None:
            out[i] = Review(None, "a confident divergence", d, gap, drift)
        else:
            out[i] = Review(None, "asked again, the tokens do not part (an answer changed)", None, gap, drift)
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
