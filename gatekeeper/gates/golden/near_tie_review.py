"""The golden gate's second look at cases that fail only because the candidate answered
differently: both targets are asked again with logprobs, and a divergence at a near tie (see
`stats/near_tie.py`) is noise, not a regression. Confident divergences stay FAIL, with the token
where the answers part named in the reason.

A near tie that costs the candidate a task the reference passes (it answers 22 where the reference
answers 28) is not forgiven on that alone: one ask cannot tell a declared bf16 build's rounding
from a bug that moved the right token by less than a nat. The reference's answer is forced on
both (`gates/forcing.py`): a candidate that follows it but for near ties lost the case to a
**precision flip** (forgiven; `golden.pass_rate` counts at most `max_precision_flips` of them as
passed), one that confidently leaves it a regression (FAIL). A case with tools is forced with its
tools rendered in the prompt and the reference's answer as its model generated it, tool-call
markup included. Where forcing cannot run (a case with a response format, a target without
`/tokenize`, completions, echo or logprobs), the case is undecided."""

from __future__ import annotations

from dataclasses import replace

from gatekeeper.endpoints.fanout import fan_out
from gatekeeper.endpoints.responses import ChatResponse
from gatekeeper.gates.forcing import TOP_K, force_in, generated
from gatekeeper.gates.golden.checks import NearTie
from gatekeeper.gates.golden.judge import CaseJudgement, passes_absolute
from gatekeeper.gates.golden.settings import GoldenSettings
from gatekeeper.gates.interface import GateContext
from gatekeeper.golden.golden_set import GoldenCase
from gatekeeper.golden.request import ask
from gatekeeper.stats.near_tie import Divergence, first_divergence


def review_near_ties(ctx: GateContext, cases: list[GoldenCase], judgements: list[CaseJudgement | None], settings: GoldenSettings,
                     live_reference: bool) -> None:
    """Forgive the divergence FAILs among `judgements` that are near ties (in place)."""
    todo = [i for i, j in enumerate(judgements) if j is not None and j.divergent]
    if not todo:
        return
    caps = ctx.capabilities
    why_not = ("the reference is a recorded baseline" if not live_reference else
               "a target returns no logprobs" if not (caps["reference"].logprobs and caps["candidate"].logprobs) else
               "near_tie_max_reviews is 0" if settings.near_tie_max_reviews == 0 else None)
    if why_not:
        for i in todo:
            _note(judgements[i], f"no near-tie review ({why_not}): the comparison is exact")
        return
    for i in todo[settings.near_tie_max_reviews:]:
        _note(judgements[i], f"not reviewed for a near tie (more than near_tie_max_reviews={settings.near_tie_max_reviews} cases)")
    todo = todo[:settings.near_tie_max_reviews]
    k = ctx.shared_top_k(TOP_K)
    dtype = ctx.candidate_dtype()
    gap, drift = settings.gap(dtype), settings.drift(dtype)
    ctx.progress(f"golden: {len(todo)} diverging case(s) asked again with logprobs (near-tie review)")
    picked = [cases[i] for i in todo]
    refs = fan_out(lambda c: ask(ctx.reference, c, seed=ctx.run.seed, top_logprobs=k), picked, settings.concurrency)
    cands = fan_out(lambda c: ask(ctx.candidate, c, seed=ctx.run.seed, top_logprobs=k), picked, settings.concurrency)
    for i, ref, cand in zip(todo, refs, cands):
        j = judgements[i]
        assert j is not None
        if not isinstance(ref, ChatResponse) or not isinstance(cand, ChatResponse):
            _note(j, "near-tie review failed (a request failed): the comparison stays exact")
            continue
        d = first_divergence(ref, cand, gap, drift)
        if d is None:
            _note(j, "near-tie review: asked again with logprobs, the answers' tokens do not part (the difference is "
                     "outside the tokens, or the answers changed)")
        elif d.tie and passes_absolute(cases[i], ref) and not passes_absolute(cases[i], cand):
            _lost_at_near_tie(ctx, cases[i], j, ref, d, settings)
        elif d.tie:
            j.case = replace(j.case, near_tie=_parted(d, gap)) if j.case is not None else None
            j.forgive(f"near tie, not a regression: {d.describe()} (near-tie gap {gap:g}, drift {drift:g} nats)")
        else:
            j.case = replace(j.case, divergence=_parted(d, gap)) if j.case is not None else None
            _note(j, f"a confident divergence: {d.describe()} (near-tie gap {gap:g}, drift {drift:g} nats)")


def _lost_at_near_tie(ctx: GateContext, case: GoldenCase, j: CaseJudgement, ref: ChatResponse, d: Divergence,
                      settings: GoldenSettings) -> None:
    """A task only the candidate fails, parting at near tie `d`: the reference's answer forced on
    both tells a precision flip (forgiven) from a regression (the FAIL stays); else undecided."""
    dtype = ctx.candidate_dtype()
    gap, drift = settings.gap(dtype), settings.drift(dtype)
    where = f"{d.describe()} (near-tie gap {gap:g}, drift {drift:g} nats)"
    answer, why_not = _answer(case, ref)
    forced = force_in(ctx, settings, list(case.messages), answer, tools=case.tools or None) if answer is not None else why_not
    if isinstance(forced, str):
        j.case = replace(j.case, near_tie=_parted(d, gap)) if j.case is not None else None
        j.undecide(f"undecided: the candidate fails a task the reference passes, parting from it at a near tie: {where}; "
                   f"{forced}, so a precision flip cannot be told from a regression", "lost at a near tie, not forced")
    elif forced.follows:
        j.case = replace(j.case, near_tie=_parted(d, gap), forced="precision flip") if j.case is not None else None
        j.forgive(f"a precision flip, not a regression: the candidate fails a task the reference passes, parting from it "
                  f"at a near tie: {where}; {forced.describe()}")
        j.precision_flip = True
    else:
        j.case = replace(j.case, divergence=_parted(d, gap), forced="regression") if j.case is not None else None
        _note(j, f"a regression: the answers part at a near tie ({where}), but {forced.describe()}")


def _answer(case: GoldenCase, ref: ChatResponse) -> tuple[str | None, str]:
    """The reference's answer to force (the text its model generated, tool-call markup included
    where the case offers tools), or None and why it cannot be forced."""
    if case.response_format:
        return None, "the case carries a response format, whose grammar a forced plain prompt does not"
    if case.tools:
        raw = generated(ref)
        return (raw, "") if raw else (None, "the reference's answer came without logprobs")
    if ref.tool_calls or not ref.text:
        return None, "the reference's answer is not plain text"
    return ref.text, ""


def _parted(d: Divergence, gap: float) -> NearTie:
    """Where the answers part, for the case's finding."""
    return NearTie(index=d.index, reference=d.reference.token, candidate=d.candidate.token, reference_gap=d.reference_gap,
                   candidate_gap=d.candidate_gap, max_gap=gap)


def _note(j: CaseJudgement | None, note: str) -> None:
    if j is not None:
        j.notes.append(note)
