"""`longctx.json_schema`: structured output deep into a long conversation, against the reference.

After `json_history_tokens` or more of earlier chat, each case asks for a JSON answer to a stated
schema, validated with jsonschema (the golden gate's `json_schema` assertion). Every second case
also sends the schema as `response_format` (the engine's enforcement, deep in a long chat, beside
free requests); the others leave the JSON to the model. Enforced cases both targets refuse alike (a
server without `response_format: json_schema`) are set aside and the rest judged. Cases lost by
the candidate, or by both, are reviewed as the tool cases are (`tool_review.py`).
"""

from __future__ import annotations

import random
import time
from typing import Any

from gatekeeper.detection import Items
from gatekeeper.endpoints.fanout import fan_out
from gatekeeper.evidence import Evidence, Table
from gatekeeper.gates.interface import GateContext
from gatekeeper.gates.longctx import tasks, tool_review
from gatekeeper.gates.longctx.both_fail import Outcome
from gatekeeper.gates.longctx.checks import JSON_SCHEMA, JsonSchemaFinding
from gatekeeper.gates.longctx.history import fitted_history
from gatekeeper.gates.longctx.near_ties import divergence_table
from gatekeeper.gates.longctx.settings import LongContextSettings
from gatekeeper.gates.longctx.tokens import Messages, TokenCounter
from gatekeeper.gates.longctx.traffic import (both, chat, failed_requests, first_error, kept, prompt_span,
                                              refused_by_both, refused_each, refused_note)
from gatekeeper.golden.structured import JsonSchema
from gatekeeper.results import Status
from gatekeeper.stats.noise import ask_twice


def run(ctx: GateContext, s: LongContextSettings, rng: random.Random, counter: TokenCounter, room: int) -> None:
    """`longctx.json_schema`: JSON answers to a stated schema after a long chat, every second case
    with the schema as `response_format`; prompts within `room` tokens."""
    t0 = time.perf_counter()
    cases = []
    for i in range(s.json_cases):
        prompt, schema, _ = tasks.json_sample(rng, 2 + i % 3)
        ask: Messages = [{"role": "user", "content": prompt}]
        pre = fitted_history(rng, s.json_history_tokens, ask, room, counter)
        enforced: dict[str, Any] = {"extra": {"response_format": {"type": "json_schema",
                                                                  "json_schema": {"name": "answer", "schema": schema}}}}
        if pre is not None:
            cases.append(([*pre, *ask], schema, enforced if i % 2 else {}))
    if not cases:
        ctx.skip(JSON_SCHEMA, f"the context ({room + s.tool_answer_tokens + 8} tokens) is too short for a JSON case")
        ctx.not_judged("context too short", s.json_cases)
        return
    limit = s.tool_answer_tokens
    items = [(messages, None, schema) for messages, schema, _ in cases]
    passes, cand = both(lambda ep: ask_twice(lambda c: chat(ep, c[0], max_tokens=limit, **c[2]), cases, s.concurrency,
                                             s.noise_floor_concurrency),
                        ctx.reference, ctx.candidate,
                        lambda ep: fan_out(lambda c: chat(ep, c[0], max_tokens=limit, **c[2]), cases, s.concurrency))
    ref, ref2 = passes.first, passes.second
    refusal = refused_by_both(ref, cand, ref2 or [])
    if refusal is not None:
        ctx.refused_by_both(JSON_SCHEMA, refusal, len(cases))
        return
    # The enforced cases both targets refuse alike (a server without `response_format: json_schema`)
    # are set aside; the cases that leave the JSON to the model are judged.
    refused = refused_each(ref, cand, ref2 or [])
    asked = len(cases)
    cases, items, ref, cand = kept(cases, refused), kept(items, refused), kept(ref, refused), kept(cand, refused)
    ref2 = None if ref2 is None else kept(ref2, refused)
    ctx.not_judged("both fail identically", asked - len(cases))
    err = first_error(ref, cand, ref2 or [])
    if err is not None:
        ctx.error_check(JSON_SCHEMA, err)
        ctx.not_judged("request failed", len(cases), failed_requests(ref, cand, ref2 or []))
        return
    checked = [(JsonSchema(schema=schema).check(a, None), JsonSchema(schema=schema).check(b, None))  # type: ignore[arg-type]
               for (_, schema, _), a, b in zip(cases, ref, cand)]
    outcomes, parted = tool_review.both_fail(ctx, s, items, ref, ref2, cand, limit,
                          [i for i, (oa, ob) in enumerate(checked) if not oa.ok and not ob.ok], [c[2] for c in cases])
    found = tool_review.regressions_reviewed(ctx, s, items, [i for i, (oa, ob) in enumerate(checked)
                                                             if oa.ok and not ob.ok and not (ob.hard and not oa.hard)],
                                             limit, ref, [c[2] for c in cases])
    ties = {i for i, r in found.items() if r.undecided}  # lost at a near tie, not forced: not judged
    flips = {i for i, r in found.items() if r.flip}  # forced: judged, and forgiven up to a limit
    rows, regressions, hard, differ, judged = [], 0, 0, 0, 0
    for i, (oa, ob) in enumerate(checked):
        outcome = outcomes.get(i)
        regressions += oa.ok and not ob.ok and i not in ties | flips
        hard += ob.hard and not oa.hard
        differ += outcome is Outcome.DIFFERS and not (ob.hard and not oa.hard)
        if i in ties:
            ctx.not_judged("near tie")
        elif oa.ok or (ob.hard and not oa.hard) or outcome is Outcome.DIFFERS:
            ctx.judged()
            judged += 1
        else:
            ctx.not_judged(outcome.value if outcome is not None else "reference fails")
        rows.append(["✓" if oa.ok else "✗", "✓" if ob.ok else "✗",
                     found[i].outcome() if i in found else tool_review.both_fail_cell(outcome, i in parted), ob.reason[:160]])
    both_fail = len(outcomes)
    # nothing judged: undecided (`ctx.check`); a case failed only by the candidate, at a near tie, is never forgiven
    # unless forcing shows a precision flip, and only so many of those
    status = (Status.FAIL if regressions or hard or differ
              else Status.WARN if ties or len(flips) > s.tool_max_precision_flips else Status.PASS)
    evidence: list[Evidence] = [Table("JSON-schema cases", ["reference", "candidate", "both fail / review", "candidate problem"],
                                      rows)]
    if found or parted:
        evidence.append(divergence_table(ctx, s, "cases", {f"case {i + 1}": d for i, d in sorted(
            {**parted, **{j: r.divergence for j, r in found.items()}}.items())}))
    evidence += tool_review.forced_evidence({f"case {i + 1}": r for i, r in sorted(found.items())})
    ctx.check(JSON_SCHEMA, status, f"{regressions} schema regression(s), {hard} answer(s) only the candidate breaks as JSON, "
              f"in {len(cases)} cases after a long chat ({prompt_span(cand)} prompt tokens); {both_fail} neither gets right, "
              f"{differ} of them answered differently from the reference's repeatable answer"
              + tool_review.review_note(found, len(cases), s.tool_max_precision_flips)
              + refused_note(refused),
              JsonSchemaFinding(cases=len(cases), regressions=regressions, invalid_json=hard, both_fail=both_fail,
                                both_fail_differs=differ, near_ties=len(ties | flips), refused_by_both=asked - len(cases),
                                precision_flips=len(flips), precision_flip_limit=s.tool_max_precision_flips),
              evidence, started=t0,
              undecided=status is Status.WARN,
              judged=Items(judged, "JSON-schema cases the candidate gets wrong where the reference does not",
                           reference_fails_all=not ties))
