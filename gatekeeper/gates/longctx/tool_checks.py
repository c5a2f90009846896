"""Tool calling (and, through `json_checks.py`, structured output) deep into a long conversation, against the reference.

After at least `tool_history_tokens` of earlier chat (canonical exchanges), each case asks for tool
calls from a menu of OpenAI-style tools. Calls are judged BFCL-style by the golden gate's
matcher (`golden/tool_match.py`: name, required and undeclared arguments, JSON types, enums,
values; parallel calls order-free). Checks:

- `longctx.tool_calls`: single and parallel calls; a case the reference gets right and the
  candidate wrong is a regression; arguments that are not a JSON object fail on their own;
- `longctx.tool_result`: a tool result fed back, the final answer must use it (exact text);
- `longctx.tool_stream`: the candidate's streamed calls, assembled from deltas, must equal its
  non-streamed calls (each streamed twin is sent right behind its non-streamed request);
- `longctx.json_schema`: structured output after a long chat (`json_checks.py`, run from here
  with the same random stream).

A case neither target gets right is still compared with what the reference answered (the
reference is asked twice, the second time at `noise_floor_concurrency` in reverse order): the
same answer means the case does not suit the model (not judged); a different answer where the
reference repeats its own is a regression, unless the two differ at a near tie (`both_fail.py`).
A case the reference gets right and the candidate wrong is a regression; where the two, asked
again with logprobs, part at a near tie it is not forgiven but undecided (HOLD when blocking): a
precision change and a regression look alike there, and a lost task is never noise by fiat.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Sequence
from typing import Any

from gatekeeper.endpoints.chat_types import ToolDefinition
from gatekeeper.detection import Items
from gatekeeper.evidence import Evidence, Table, TextPair
from gatekeeper.gates.interface import GateContext
from gatekeeper.gates.longctx.both_fail import Outcome
from gatekeeper.gates.longctx.near_ties import divergence_table
from gatekeeper.gates.forcing import Forced
from gatekeeper.gates.longctx import json_checks, tool_review
from gatekeeper.gates.longctx.history import fitted_history
from gatekeeper.gates.longctx.tool_review import key
from gatekeeper.stats.noise import ask_twice
from gatekeeper.golden.call_order import CANONICAL_NOTE, in_canonical_order
from gatekeeper.golden.tool_match import ActualCall, ExpectedCall, match_calls
from gatekeeper.gates.longctx.settings import LongContextSettings
from gatekeeper.gates.longctx import tasks
from gatekeeper.gates.longctx.tokens import Messages, TokenCounter
from gatekeeper.endpoints.fanout import fan_out, raise_first
from gatekeeper.gates.longctx.traffic import (Answer, both, chat, failed_requests, first_error, refused_by_both,
                                              text, prompt_span)
from gatekeeper.endpoints.responses import ChatResponse, ToolCall
from gatekeeper.results import Status
from gatekeeper.gates.longctx.checks import (TOOL_CALLS, TOOL_RESULT, TOOL_STREAM, ToolCallsFinding, ToolResultFinding,
                                             ToolStreamFinding)

_CALL_CASES = (1, 2, 3, 1, 2, 1)  # calls per case, cycled


def _with_tools(messages: Messages, tools: list[ToolDefinition]) -> Messages:
    """Messages with the tool definitions as text in the system turn: what the template adds,
    for counting (the /tokenize request of the client carries no tools)."""
    return [{"role": "system", "content": (messages[0]["content"] or "") + json.dumps(tools)}, *messages[1:]]


def _calls_ok(a: Answer, expected: list[dict[str, Any]], tools: list[ToolDefinition]) -> tuple[bool, str, bool]:
    """(matches, problems, hard) for an answer's calls: hard when arguments are not a JSON object."""
    assert isinstance(a, ChatResponse)
    if any(not isinstance(c.parsed, dict) for c in a.tool_calls):
        return False, "tool-call arguments are not a JSON object", True
    exp = [ExpectedCall(n, args) for n, args in tasks.call_expectations(expected)]
    m = match_calls([ActualCall(c.name, c.parsed) for c in a.tool_calls], exp, tools)
    return m.ok, "; ".join(m.problems), False


def _render_pair(a: Answer, b: Answer) -> tuple[str, str]:
    """Two answers' text and calls for a side-by-side text; where both made more than one call,
    in canonical order on both sides with a note when that moved any (`golden/call_order.py`)."""
    if not isinstance(a, ChatResponse) or not isinstance(b, ChatResponse):
        return _render(a), _render(b)
    a_calls, b_calls, moved = in_canonical_order(a.tool_calls, b.tool_calls, lambda c: (c.name, c.arguments))
    note = f"\n{CANONICAL_NOTE}" if moved else ""
    return _render(a, a_calls) + note, _render(b, b_calls) + note


def _render(a: Answer, calls: Sequence[ToolCall] | None = None) -> str:
    """An answer's text then its calls (`calls`: in that order), or the error of a failed request."""
    if not isinstance(a, ChatResponse):
        return str(a)
    return text(a) + "".join(f"\n{c.name}({c.arguments})" for c in (a.tool_calls if calls is None else calls))


def run(ctx: GateContext, s: LongContextSettings, counter: TokenCounter, context: int) -> None:
    """The tool and JSON checks (tool checks SKIP where a target has no tool calling); prompts
    leave room for `tool_answer_tokens` within the `context`."""
    room = context - s.tool_answer_tokens - 8
    rng = random.Random(f"{ctx.run.seed}:longctx:tools")
    no_tools = ctx.missing("tools", "tool_parsing")
    if no_tools:
        for name, items in ((TOOL_CALLS, s.tool_cases), (TOOL_RESULT, 1), (TOOL_STREAM, s.tool_cases)):
            ctx.skip_missing(name, no_tools, items)
    else:
        _tools(ctx, s, rng, counter, room)
    json_checks.run(ctx, s, rng, counter, room)


def _tools(ctx: GateContext, s: LongContextSettings, rng: random.Random, counter: TokenCounter, room: int) -> None:
    t0 = time.perf_counter()
    n = s.tool_cases
    samples = [tasks.tool_sample(rng, _CALL_CASES[i % len(_CALL_CASES)], with_result=False) for i in range(n)]
    last = tasks.tool_sample(rng, 1, with_result=True)
    widest = max([*samples, last], key=lambda c: counter.count(_with_tools(c[0], c[1])))
    pre = fitted_history(rng, s.tool_history_tokens, _with_tools(widest[0], widest[1]), room, counter)
    if pre is None:
        for name in (TOOL_CALLS, TOOL_RESULT, TOOL_STREAM):
            ctx.skip(name, f"the context ({room + s.tool_answer_tokens + 8} tokens) is too short for a tool case "
                           "and its answer")
        ctx.not_judged("context too short", 2 * n + 1)
        return
    cases = [(m[:1] + pre + m[1:], tools, expected) for m, tools, expected in samples]
    result_case = (last[0][:1] + pre + last[0][1:], last[1], last[2])
    limit = s.tool_answer_tokens
    items = [*cases, result_case]

    def ask(ep):
        return ask_twice(lambda c: chat(ep, c[0], max_tokens=limit, tools=c[1], tool_choice="auto"), items,
                         s.concurrency, s.noise_floor_concurrency)

    def ask_twice_candidate(ep) -> list[tuple[Answer, Answer | None]]:
        """Each case non-streamed then at once streamed (the twin right behind it, so the check
        isolates the streaming parser from whatever other traffic does to the cache)."""
        def pair(i: int) -> tuple[Answer, Answer | None]:
            c = items[i]
            plain = chat(ep, c[0], max_tokens=limit, tools=c[1], tool_choice="auto")
            return plain, (chat(ep, c[0], max_tokens=limit, tools=c[1], tool_choice="auto", stream=True) if i < n else None)
        return raise_first(fan_out(pair, list(range(len(items))), s.concurrency))  # chat() returns its errors

    passes, pairs = both(ask, ctx.reference, ctx.candidate, ask_twice_candidate)
    ref, ref2 = passes.first, passes.second
    cand: list[Answer] = [p[0] for p in pairs]
    streamed: list[Answer] = [p[1] for p in pairs[:n]]
    refusal = refused_by_both(ref, cand, streamed, ref2 or [])
    if refusal is not None:  # the tool result and the streamed calls ride on the same requests
        ctx.refused_by_both(TOOL_CALLS, refusal, 2 * n + 1)
        ctx.refused_by_both(TOOL_RESULT, refusal, 0)
        ctx.refused_by_both(TOOL_STREAM, refusal, 0)
        return
    err = first_error(ref, cand, streamed, ref2 or [])
    if err is not None:
        for check in (TOOL_CALLS, TOOL_RESULT, TOOL_STREAM):
            ctx.error_check(check, err)
        ctx.not_judged("request failed", 2 * n + 1, failed_requests(ref, cand, streamed, ref2 or []))
        return
    outcomes, parted = tool_review.both_fail(ctx, s, items, ref, ref2, cand, limit,
                          [i for i, ((_, tools, expected), a, b) in enumerate(zip(cases, ref, cand))
                           if not _calls_ok(a, expected, tools)[0] and not _calls_ok(b, expected, tools)[0]]
                          + ([n] if text(ref[n]) != result_case[2] and text(cand[n]) != result_case[2] else []))
    checked = [(_calls_ok(a, expected, tools)[0], *_calls_ok(b, expected, tools))
               for (_, tools, expected), a, b in zip(cases, ref[:n], cand[:n])]
    want = result_case[2]
    final_ref, final_cand = text(ref[-1]), text(cand[-1])
    ok_a, ok_b = final_ref == want, final_cand == want
    found = tool_review.regressions_reviewed(ctx, s, items, [i for i, (ra, cb, _, is_hard) in enumerate(checked)
                                                             if ra and not cb and not is_hard]
                                             + ([n] if ok_a and not ok_b else []), limit, ref)
    ties = {i for i, r in found.items() if r.undecided}  # lost at a near tie, not forced: not judged
    flips = {i for i, r in found.items() if r.flip and i < n}  # forced: judged, and forgiven up to a limit
    rows, regressions, hard, both_fail, differ, judged = [], 0, 0, 0, 0, 0
    for i, ((_, _, expected), (ra, cb, problems, is_hard)) in enumerate(zip(cases, checked)):
        outcome = outcomes.get(i)
        regressions += ra and not cb and i not in ties | flips
        hard += is_hard
        both_fail += not ra and not cb
        differ += outcome is Outcome.DIFFERS and not is_hard
        if i in ties:
            ctx.not_judged("near tie")
        elif ra or is_hard or outcome is Outcome.DIFFERS:
            ctx.judged()
            judged += 1
        else:
            ctx.not_judged(outcome.value if outcome is not None else "reference fails")
        rows.append([len(expected), "✓" if ra else "✗", "✓" if cb else "✗",
                     found[i].outcome() if i in found else tool_review.both_fail_cell(outcome, i in parted), problems or ""])
    # nothing judged: undecided (`ctx.check`); a case failed only by the candidate, at a near tie, is never forgiven
    # unless forcing shows a precision flip, and only so many of those
    status = (Status.FAIL if regressions or hard or differ
              else Status.WARN if ties - {n} or len(flips) > s.tool_max_precision_flips else Status.PASS)
    evidence: list[Evidence] = [Table("tool-call cases (calls, reference, candidate, both fail or near tie, problems)",
                                      ["calls", "reference", "candidate", "both fail / review", "candidate problems"], rows)]
    if (found.keys() | parted.keys()) - {n}:
        evidence.append(divergence_table(ctx, s, "cases", {f"case {i + 1}": d for i, d in sorted(
            {**parted, **{j: r.divergence for j, r in found.items()}}.items()) if i < n}))
    evidence += tool_review.forced_evidence({f"case {i + 1}": r for i, r in sorted(found.items()) if i < n})
    ctx.check(TOOL_CALLS, status, f"{regressions} regression(s) and {hard} malformed call(s) in {n} cases after "
              f"a long chat ({prompt_span(cand[:n])} prompt tokens); {both_fail} case(s) neither target gets right, "
              f"{differ} of them answered differently from the reference's repeatable answer"
              + tool_review.review_note(found, n, s.tool_max_precision_flips),
              ToolCallsFinding(cases=n, regressions=regressions, malformed=hard, both_fail=both_fail,
                               both_fail_differs=differ, near_ties=len((ties | flips) - {n}), precision_flips=len(flips),
                               precision_flip_limit=s.tool_max_precision_flips), evidence, started=t0,
              undecided=status is Status.WARN,
              judged=Items(judged, "tool-call cases the candidate gets wrong where the reference does not",
                           reference_fails_all=not ties - {n}))
    _result(ctx, n, want, final_ref, final_cand, outcomes.get(n), found.get(n))
    # The candidate's stream against its own non-streamed answer: no reference needed. Where both
    # targets fail the case (a malformed call), parsers legitimately differ in what they make of
    # the broken text in a stream (vLLM's Hermes parser streams part of it as a call): noted, not judged.
    differs = [i for i, (p, q) in enumerate(zip(cand[:n], streamed)) if key(p) != key(q)]
    quirks = [i for i in differs if i in outcomes]
    diff = [i for i in differs if i not in outcomes]
    ctx.judged(n - len(quirks))
    if quirks:
        ctx.not_judged("both fail: stream of a malformed call", len(quirks))
    shown = diff or quirks
    quirk_text = (f"; {len(quirks)} answer(s) that both targets get wrong stream differently from their non-streamed "
                  "text (the streaming parser reads a malformed call differently): not judged") if quirks else ""
    ctx.check(TOOL_STREAM, Status.FAIL if diff else Status.PASS,
              (f"{len(diff)} of {n} streamed answers differ from the non-streamed ones" if diff else
               f"{n - len(quirks)} of {n} streamed tool-call answers judged, each equal to its non-streamed one"
               if len(quirks) < n else f"none of {n} streamed tool-call answers judged") + quirk_text,
              ToolStreamFinding(cases=n, differ=len(diff), differ_both_fail=len(quirks)),
              [TextPair("non-streamed vs streamed (candidate)", *_render_pair(cand[shown[0]], streamed[shown[0]]), 0, None)]
              if shown else [], judged=Items(n - len(quirks), "streamed tool-call answers differing from the non-streamed",
                                             reference_fails_all=True))


def _result(ctx: GateContext, n: int, want: str, final_ref: str, final_cand: str, outcome: Outcome | None,
            review: tool_review.Reviewed | None) -> None:
    """`longctx.tool_result`: the final answer after a tool result (case `n`), the reference's and
    the candidate's, with the review of a candidate-only miss (`review`)."""
    ok_a, ok_b = final_ref == want, final_cand == want
    tie = review is not None and review.undecided
    flip = review is not None and review.flip
    judged_result = not tie and (ok_a or outcome is Outcome.DIFFERS)
    if tie:
        ctx.not_judged("near tie")
    elif judged_result:
        ctx.judged()
    else:
        ctx.not_judged(outcome.value if outcome is not None else "reference fails")
    bad = (ok_a and not ok_b and not tie and not flip) or outcome is Outcome.DIFFERS
    note = ""
    if review is not None:
        d, forced = review.divergence.describe(), review.forced
        if isinstance(forced, Forced) and flip:
            note = f"; a precision flip: the answers part at a near tie ({d}), and {forced.describe()}"
        elif isinstance(forced, Forced):
            note = f"; asked again the answers part at a near tie ({d}), but {forced.describe()}"
        elif tie:
            note = (f"; undecided: asked again with logprobs the answers part at a near tie ({d}) and the reference's "
                    f"answer could not be forced ({forced}) — a precision change or a regression, and a result only the "
                    "candidate misses is never forgiven as a near tie")
        else:
            note = f"; asked again: {d}, confident"
    ctx.check(TOOL_RESULT, Status.FAIL if bad else Status.WARN if tie else Status.PASS,
              f"final answer after a tool result: reference {'uses' if ok_a else 'misses'} it, candidate "
              f"{'uses' if ok_b else 'misses'} it (expected {want!r})" + (f"; both miss it: {outcome.value}" if outcome else "")
              + note,
              ToolResultFinding(expected=want, reference=final_ref, candidate=final_cand,
                                both_fail=outcome.value if outcome else None, near_tie=tie or flip, precision_flip=flip),
              [] if ok_b else [TextPair("final answer after the tool result", final_ref, final_cand, 0, want)], undecided=tie,
              judged=Items(int(judged_result), "final answers after a tool result the reference uses", reference_fails_all=not tie))


