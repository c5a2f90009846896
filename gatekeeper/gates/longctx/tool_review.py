"""Gate 4's second look at tool and JSON cases the candidate gets wrong: both targets asked
again with logprobs (`near_ties.py`).

- A case neither target gets right is compared with the reference's answer, the reference asked
  twice (`both_fail.py`): a different answer where the reference repeats its own is a regression,
  unless the two part at a near tie, or carry the same tokens rendered differently.
- A case the reference gets right and the candidate wrong (not a hard failure: arguments or JSON
  that do not parse are never forgiven) is a regression unless, asked again, the two part at a
  near tie within the candidate dtype's gap: a declared bf16 build choosing the other of two
  almost equally likely tokens. A confident divergence stands, shown with both sides' logprobs.
"""

from __future__ import annotations

from typing import Any

from gatekeeper.gates.interface import GateContext
from gatekeeper.gates.longctx.both_fail import Outcome, compare
from gatekeeper.gates.longctx.near_ties import divergences, reask
from gatekeeper.gates.longctx.settings import LongContextSettings
from gatekeeper.gates.longctx.tokens import Messages
from gatekeeper.gates.longctx.traffic import Answer, text
from gatekeeper.stats.near_tie import Divergence, asked_again, first_divergence
from gatekeeper.endpoints.responses import ChatResponse


def key(a: Answer) -> Any:
    """An answer in substance: its text and its calls (name, parsed arguments)."""
    assert isinstance(a, ChatResponse)
    return (text(a), tuple((c.name, repr(c.parsed)) for c in a.tool_calls))


def _extras(items: list[tuple[Messages, Any, Any]], indices: list[int],
            request_extras: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Each case's further request fields, sent again with the review: its tools, or its own."""
    return [{"tools": items[i][1], "tool_choice": "auto"} if items[i][1] else
            (request_extras[i] if request_extras else {}) for i in indices]


def regressions_reviewed(ctx: GateContext, s: LongContextSettings, items: list[tuple[Messages, Any, Any]],
                         indices: list[int], max_tokens: int,
                         request_extras: list[dict[str, Any]] | None = None) -> dict[int, Divergence]:
    """Per regression in `indices` (the reference right, the candidate wrong): where the answers
    asked again first part, a near tie (`.tie`: noise) or confident; absent when the review could
    not tell (no logprobs, a failed request, the answers no longer part)."""
    found = divergences(ctx, s, [items[i][0] for i in indices], max_tokens, _extras(items, indices, request_extras))
    return {i: d for i, d in zip(indices, found) if d is not None}


def both_fail(ctx: GateContext, s: LongContextSettings, items: list[tuple[Messages, Any, Any]], ref: list[Answer],
               again: list[Answer] | None, cand: list[Answer], max_tokens: int, indices: list[int],
               request_extras: list[dict[str, Any]] | None = None) -> tuple[dict[int, Outcome], dict[int, Divergence]]:
    """The both-fail outcome of each case in `indices` (both targets miss it): compared with the
    reference's answer and its second one (`again`, None without a noise-floor pass); answers
    that differ only at a near tie are told apart from a regression. Also where the reviewed
    answers first part (for the evidence). `request_extras`: each case's further request fields,
    sent again with the logprob review."""
    out = {i: compare(key(cand[i]), key(ref[i]), key(again[i]) if again is not None else None) for i in indices}
    differ = [i for i, o in out.items() if o is Outcome.DIFFERS]
    extra = _extras(items, differ, request_extras)
    gap, drift = s.gap(ctx.run.runtimes["candidate"].dtype), s.drift(ctx.run.runtimes["candidate"].dtype)
    parted: dict[int, Divergence] = {}
    for i, pair in zip(differ, reask(ctx, s, [items[i][0] for i in differ], max_tokens, extra)):
        if pair is None:
            continue
        why = asked_again(*pair, gap, key(pair[0]) == key(ref[i]) and key(pair[1]) == key(cand[i]), drift)
        if why is not None:
            out[i] = Outcome.NEAR_TIE if why == "near tie" else Outcome.SAME_TOKENS
        d = first_divergence(*pair, gap, drift)
        if d is not None:
            parted[i] = d
    return out, parted
