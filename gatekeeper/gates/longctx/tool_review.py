"""Gate 4's second look at tool and JSON cases the candidate gets wrong: both targets asked
again with logprobs (`near_ties.py`).

- A case neither target gets right is compared with the reference's answer, the reference asked
  twice (`both_fail.py`): a different answer where the reference repeats its own is a regression,
  unless the two part at a near tie, or carry the same tokens rendered differently.
- A case the reference gets right and the candidate wrong (not a hard failure: arguments or JSON
  that do not parse are never forgiven) is a regression unless, asked again, the two part at a
  near tie within the candidate dtype's gap. A confident divergence stands, shown with both sides'
  logprobs. At a near tie the reference's answer (what its model generated, tool-call markup
  included) is forced on both (`gates/forcing.py`, the prompt rendered with the case's tools): a
  candidate that follows it but for near ties lost the case to a **precision flip** (a declared
  bf16 build choosing the other of two almost equally likely tokens; judged and forgiven, and more
  than the policy's `tool_max_precision_flips` make the check undecided), one that confidently leaves
  it **regressed**. Where forcing cannot run (a response format, no `/tokenize`, echo or
  logprobs, the reference answering otherwise asked again) the case is undecided.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gatekeeper.evidence import Evidence, Table
from gatekeeper.gates.forcing import Forced, force_in, generated
from gatekeeper.gates.interface import GateContext
from gatekeeper.gates.longctx.both_fail import Outcome, compare
from gatekeeper.gates.longctx.near_ties import reask
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


@dataclass(frozen=True, kw_only=True)
class Reviewed:
    """A case only the candidate fails, asked again of both with logprobs: where the two answers
    first part and, at a near tie, the reference's answer forced on both (or why it could not be)."""

    divergence: Divergence
    forced: Forced | str | None = None  # None: a confident divergence, not forced

    @property
    def flip(self) -> bool:
        """A precision flip: a near tie, and forced the candidate follows the reference's answer."""
        return isinstance(self.forced, Forced) and self.forced.follows

    @property
    def regression(self) -> bool:
        """A confident divergence, or a near tie where the forced candidate confidently leaves the
        reference's answer."""
        return not self.divergence.tie or (isinstance(self.forced, Forced) and not self.forced.follows)

    @property
    def undecided(self) -> bool:
        """A near tie forcing could not resolve: a precision change or a regression."""
        return self.divergence.tie and not isinstance(self.forced, Forced)

    def outcome(self) -> str:
        """The review's result for a table cell."""
        return ("precision flip (forgiven)" if self.flip else "near tie, not forced (undecided)" if self.undecided
                else "regression, confident when forced" if self.divergence.tie else "regression, confident divergence")


def regressions_reviewed(ctx: GateContext, s: LongContextSettings, items: list[tuple[Messages, Any, Any]],
                         indices: list[int], max_tokens: int, ref: list[Answer],
                         request_extras: list[dict[str, Any]] | None = None) -> dict[int, Reviewed]:
    """Per regression in `indices` (the reference right, the candidate wrong): where the answers
    asked again first part, and at a near tie the reference's answer (`ref`: its first answers)
    forced on both; absent when the review could not tell (no logprobs, a failed request, the
    answers no longer part)."""
    extras = _extras(items, indices, request_extras)
    dtype = ctx.candidate_dtype()
    gap, drift = s.gap(dtype), s.drift(dtype)
    out: dict[int, Reviewed] = {}
    for i, extra, pair in zip(indices, extras, reask(ctx, s, [items[i][0] for i in indices], max_tokens, extras)):
        d = first_divergence(*pair, gap, drift) if pair is not None else None
        if pair is not None and d is not None:
            out[i] = Reviewed(divergence=d, forced=_forced(ctx, s, items[i][0], extra, pair[0], ref[i]) if d.tie else None)
    return out


def _forced(ctx: GateContext, s: LongContextSettings, messages: Messages, extra: dict[str, Any], again: ChatResponse,
            first: Answer) -> Forced | str:
    """The reference's answer (`again`: asked again with logprobs) forced on both, or why not."""
    if "response_format" in extra.get("extra", {}):
        return "the case carries a response format, whose grammar a forced plain prompt does not"
    if not isinstance(first, ChatResponse) or key(again) != key(first):
        return "asked again, the reference answered otherwise than at first, so its answer could not be forced"
    answer = generated(again)
    if answer is None:
        return "the reference's answer asked again came without logprobs, so it could not be forced"
    return force_in(ctx, s, messages, answer, tools=extra.get("tools"))


def forced_table(found: dict[str, Reviewed]) -> Table | None:
    """The evidence of forcing: per case lost at a near tie, whether the candidate follows the
    reference's answer forced on both (None: no case was forced)."""
    rows = [[name, r.outcome(), r.forced if isinstance(r.forced, str) else r.forced.describe()]
            for name, r in found.items() if r.forced is not None]
    return Table("cases the candidate lost at a near tie, the reference's answer forced on both",
                 ["case", "outcome", "detail"], rows) if rows else None


def review_note(found: dict[int, Reviewed], n: int, max_flips: int) -> str:
    """What the review of the regressions among the first `n` cases found, for a check's reason."""
    mine = [r for i, r in found.items() if i < n]
    flips = sum(r.flip for r in mine)
    undecided = [r for r in mine if r.undecided]
    departed = sum(r.divergence.tie and r.regression for r in mine)
    confident = sum(not r.divergence.tie for r in mine)
    return ((f"; undecided: {len(undecided)} case(s) only the candidate fails part from the reference at a near tie "
             f"(asked again with logprobs) and could not be forced ({undecided[0].forced}) — a precision change or a "
             "regression, and a failed task is never forgiven as a near tie" if undecided else "")
            + (f"; {flips} case(s) only the candidate fails follow the reference's answer when it is forced, parting "
               f"from it at near ties only (precision flips, forgiven)" if flips else "")
            + (f" — more than the {max_flips} tool_max_precision_flips forgives, so undecided: a precision change "
               "this frequent or a small regression" if flips > max_flips else "")
            + (f"; {departed} case(s) parting at a near tie confidently leave the reference's answer when it is "
               "forced (regressions)" if departed else "")
            + (f"; {confident} confirmed as a confident divergence, logprobs in the evidence" if confident else ""))


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


def forced_evidence(found: dict[str, Reviewed]) -> list[Evidence]:
    """The forcing table of a check's cases lost at a near tie, when any was forced."""
    table = forced_table(found)
    return [table] if table is not None else []


def both_fail_cell(outcome: Outcome | None, parted: bool) -> str:
    """A both-fail outcome for a table cell, saying when a difference stands because the answers
    asked again no longer part (the difference came with the traffic around the first ask)."""
    if outcome is None:
        return ""
    return outcome.value + ("; asked again with logprobs they no longer part, so it stands"
                            if outcome is Outcome.DIFFERS and not parted else "")
