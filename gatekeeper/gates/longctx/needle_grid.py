"""The needle grid: a secret planted at several depths of prompts of several lengths.

Every cell (length × depth) is one greedy request to each target (and, unless `noise_floor_concurrency` is 0, a
second one to the reference at another concurrency: a cell it does not answer the same way twice
is noise and never a regression); a cell the reference answers right and the candidate wrong is
a regression (`longctx.needle_grid` fails beyond the policy's
`needle_max_regressions`, 0 by default). Where, asked again of both with logprobs, the two answers
part at a near tie within the candidate dtype's gap (a declared bf16 build rounding a digit of a
secret the model barely knows, or a cache bug that lowered the secret's logit by less than a nat),
the reference's answer is forced on both (`forced.py`): a candidate that follows it but for near
ties lost the cell to a precision flip (not judged; more than `needle_max_precision_flips` of them
make the check undecided), one that confidently leaves it regressed. Where forcing cannot run (no
`/tokenize`, echo or logprobs), the cell is not forgiven: the check is undecided (HOLD) if those
cells could take it past its limit. A confident divergence is shown with both sides' logprobs. A cell both get
wrong is still compared with what the reference answered (`both_fail.py`): the same answer means
the cell does not suit the model (not judged, grey); a different answer where the reference
repeats its own is a regression too (unless the two differ at a near tie), shown mid-colour (≠).
The grid is the evidence: a rope or position bug fails the long rows while the short ones pass;
a cache bug fails scattered cells.
"""

from __future__ import annotations

import random
import time

from gatekeeper.detection import Items
from gatekeeper.evidence import Heatmap, Table, TextPair
from gatekeeper.gates.interface import GateContext
from gatekeeper.gates.longctx.both_fail import Outcome, compare
from gatekeeper.gates.forcing import Forced, force_in
from gatekeeper.gates.longctx.near_ties import divergence_table, divergences
from gatekeeper.gates.longctx.settings import LongContextSettings
from gatekeeper.stats import noise
from gatekeeper.stats.near_tie import Divergence
from gatekeeper.gates.longctx.prompts import NeedlePrompt, needle_prompts
from gatekeeper.gates.longctx.tokens import TokenCounter
from gatekeeper.gates.longctx.traffic import (
    chat,
    failed_requests,
    first_error,
    kept,
    refused_by_both,
    refused_each,
    refused_note,
    side_by_side,
    text,
    unstable,
)
from gatekeeper.results import Status
from gatekeeper.gates.longctx.checks import NEEDLE_GRID, NeedleGridFinding

MARK = {(True, True): "✓ ✓", (True, False): "✓ ✗ regression", (False, True): "✗ ✓", (False, False): "✗ ✗"}  # (reference, candidate)


def run(ctx: GateContext, s: LongContextSettings, counter: TokenCounter, max_prompt: int) -> None:
    """Build the grid, ask both targets, record `longctx.needle_grid`."""
    t0 = time.perf_counter()
    lengths = sorted({min(int(n), max_prompt) for n in s.needle_lengths})
    depths = [float(d) for d in s.needle_depths]
    grid: list[NeedlePrompt] = []
    for n in lengths:
        grid += needle_prompts(counter, random.Random(f"{ctx.run.seed}:longctx:needle:{n}"), n, depths)
    ctx.progress(f"longctx: needle grid, {len(lengths)} lengths x {len(depths)} depths")
    conc, limit = s.concurrency, s.answer_tokens
    ref, ref2, cand = side_by_side(lambda ep, p: chat(ep, p.messages, max_tokens=limit), grid,
                                   ctx.reference, ctx.candidate, conc, s.noise_floor_concurrency)
    refusal = refused_by_both(ref, cand, ref2 or [])
    if refusal is not None:
        ctx.refused_by_both(NEEDLE_GRID, refusal, len(grid))
        return
    # A cell both targets refuse alike (a prompt past both contexts) answers nothing on either side:
    # it is a cell neither answers identically (not judged), and the grid judges the rest.
    refused = refused_each(ref, cand, ref2 or [])
    err = first_error(kept(ref, refused), kept(cand, refused), kept(ref2 or [], refused))  # a failed noise-floor request: an error
    if err is not None:
        ctx.error_check(NEEDLE_GRID, err)
        ctx.not_judged("request failed", len(grid), failed_requests(ref, cand, ref2 or []))
        return
    noisy = unstable(ref, ref2)
    ctx.notes.append(noise.describe("needle grid", sum(noisy), len(grid), conc, s.noise_floor_concurrency))
    ok_ref = [text(a) == p.value for p, a in zip(grid, ref)]
    ok_cand = [text(a) == p.value for p, a in zip(grid, cand)]
    both_fail = sum(1 for a, b in zip(ok_ref, ok_cand) if not a and not b)
    differ = [text(a) != text(b) for a, b in zip(ref, cand)]
    outcomes = {i: compare(text(cand[i]), text(ref[i]), text(ref2[i]) if ref2 is not None else None)
                for i in range(len(grid)) if not ok_ref[i] and not ok_cand[i]}
    review = [i for i in range(len(grid))
              if (ok_ref[i] and not ok_cand[i] and not noisy[i]) or outcomes.get(i) is Outcome.DIFFERS]
    ties: dict[int, Divergence] = {}  # cells whose answers part at a near tie: not judged
    confident: dict[int, Divergence] = {}
    for i, d in zip(review, divergences(ctx, s, [grid[i].messages for i in review], limit)):
        if d is not None and d.tie:
            ties[i] = d
            if i in outcomes:
                outcomes[i] = Outcome.NEAR_TIE
        elif d is not None:
            confident[i] = d
    forced = {i: force_in(ctx, s, grid[i].messages, text(ref[i])) for i in ties if ok_ref[i]}
    flips = [i for i, f in forced.items() if isinstance(f, Forced) and f.follows]
    left = {i: f for i, f in forced.items() if isinstance(f, Forced) and not f.follows}
    departed = list(left)
    unforced = [i for i, f in forced.items() if not isinstance(f, Forced)]
    tie_then_left = {i: ties.pop(i) for i in departed}  # a near tie at the divergence, a regression when forced
    missed_at_tie = [i for i in ties if ok_ref[i]]  # precision flips and cells forcing could not decide
    regressions = [i for i in review if i not in ties]
    rows = []
    for li in range(len(lengths)):
        cells = [("refused by both" if refused[i] else "✓ ✗ near tie" if i in ties and ok_ref[i] else MARK[(ok_ref[i], ok_cand[i])])
                 + (" ≠" if differ[i] and not ok_ref[i] and not ok_cand[i] else "")
                 for i in range(li * len(depths), (li + 1) * len(depths))]
        rows.append([f"{grid[li * len(depths)].tokens} tokens", *cells])
    table = Table("needle grid (reference, candidate): rows are prompt lengths, columns needle depths",
                  ["length", *(f"depth {d:g}" for d in depths)], rows)
    heat = Heatmap("needle grid (reference, candidate): green the candidate answers, red a regression, "
                   "mid-colour neither answers and the candidate's answer differs from the reference's repeatable one "
                   "(≠, a regression too), grey neither answers or the answers part at a near tie (not judged; "
                   "a secret only the reference answers, missed at a near tie, makes the check undecided)",
                   [r[0] for r in rows], [f"depth {d:g}" for d in depths],
                   [[1.0 if ok_cand[i] else None if i in ties else 0.0 if ok_ref[i] else 0.5 if outcomes.get(i) is Outcome.DIFFERS
                     else None
                     for i in range(li * len(depths), (li + 1) * len(depths))] for li in range(len(lengths))],
                   [r[1:] for r in rows], is_key=True)
    ev = [heat, table]
    if regressions:
        i = regressions[0]
        ev.append(TextPair(f"first regression: {grid[i].tokens} tokens, depth {grid[i].depth:g}, "
                           f"secret {grid[i].kind} {grid[i].value!r}", text(ref[i]), text(cand[i]), 0, grid[i].question))
    if confident or ties or departed:
        ev.append(divergence_table(ctx, s, "cells", {f"{grid[i].tokens} tokens, depth {grid[i].depth:g}": d
                                                     for i, d in sorted({**confident, **ties, **tie_then_left}.items())}))
    if forced:
        ev.append(Table("cells the candidate missed at a near tie, the reference's answer forced on both",
                        ["cell", "secret", "outcome", "detail"],
                        [[f"{grid[i].tokens} tokens, depth {grid[i].depth:g}", grid[i].value,
                          "not forced" if not isinstance(f, Forced) else "precision flip" if f.follows else "regression",
                          f if isinstance(f, str) else f.describe()] for i, f in sorted(forced.items())]))
    by_length = {str(grid[li * len(depths)].tokens): sum(1 for i in regressions if i // len(depths) == li)
                 for li in range(len(lengths))}
    differ_by_length = {str(grid[li * len(depths)].tokens): sum(differ[li * len(depths):(li + 1) * len(depths)])
                        for li in range(len(lengths))}
    limit = s.needle_max_regressions
    longest_ok = max((grid[i].tokens for i, ok in enumerate(ok_cand) if ok), default=0)
    judged = sum(1 for i, ok in enumerate(ok_ref) if ((ok and not noisy[i]) or outcomes.get(i) is Outcome.DIFFERS)
                 and i not in ties)
    ctx.judged(judged)
    ctx.not_judged("reference unstable", sum(1 for i in range(len(grid)) if noisy[i] and i not in outcomes))
    for o in Outcome:
        if o is not Outcome.DIFFERS:
            ctx.not_judged(o.value, sum(1 for x in outcomes.values() if x is o))
    ctx.not_judged("reference fails", sum(1 for i, ok in enumerate(ok_ref) if not ok and not noisy[i] and i not in outcomes))
    ctx.not_judged("near tie", sum(1 for i in ties if i not in outcomes))
    max_flips = s.needle_max_precision_flips
    status = (Status.FAIL if len(regressions) > limit
              else Status.WARN if (unforced and len(regressions) + len(unforced) > limit) or len(flips) > max_flips
              else Status.PASS if judged else Status.SKIP)
    undecided = status is Status.WARN
    reason = ("no cell judged: the reference answers none of the cells it repeats, so none can regress; "
              if status is Status.SKIP else "") + (
              f"undecided: {len(unforced)} cell(s) the reference answers and the candidate misses part from it at a near "
              f"tie — a precision change or a regression, which one ask with logprobs cannot tell apart ("
              f"{forced[unforced[0]]}), and a missed secret is never forgiven as a near tie; "
              if undecided and unforced and len(regressions) + len(unforced) > limit else "") + (
              f"undecided: {len(flips)} cell(s) the candidate misses follow the reference's answer when it is forced, "
              f"each parting from it at near ties only (precision flips), more than the {max_flips} "
              f"needle_max_precision_flips forgives: a precision change this frequent or a small regression; "
              if len(flips) > max_flips else "") + (
              f"{len(regressions)} of {len(grid)} cells regress (limit {limit}): the reference answers and the candidate "
              f"does not, or neither does and the candidate's answer differs from the reference's repeatable one"
              + (f", at {sorted({grid[i].tokens for i in regressions})} tokens" if regressions else "")
              + f"; {both_fail} cells neither answers ({_outcomes(outcomes)})" + refused_note(refused)
              + (f"; answers differ from the reference's in {sum(differ)} cells" if any(differ) else "")
              + (f"; {sum(noisy)} cells the reference itself answers differently on a second pass (noise, not judged)"
                 if any(noisy) else "")
              + (f"; {len(ties) - len(missed_at_tie)} cells neither answers part from the reference at a near tie "
                 "(asked again with logprobs: noise, not judged)" if len(ties) > len(missed_at_tie) else "")
              + (f"; {len(confident)} regression(s) confirmed as a confident divergence, logprobs in the evidence"
                 if confident and status is Status.FAIL else "")
              + (f"; {len(departed)} cell(s) missed at a near tie confidently leave the reference's answer when it is "
                 f"forced (regressions: {left[departed[0]].describe()})"
                 if departed else "")
              + (f"; {len(flips)} cell(s) missed at a near tie follow the reference's answer when it is forced "
                 f"(precision flips, not judged; up to {max_flips} forgiven)" if flips and len(flips) <= max_flips else ""))
    finding = NeedleGridFinding(
        cells=len(grid), judged=judged, regressions=len(regressions), reference_unstable=sum(noisy),
        both_fail=both_fail, both_fail_differs=sum(o is Outcome.DIFFERS for o in outcomes.values()),
        limit=limit, near_ties=len(ties) + len(departed), missed_at_near_tie=len(forced),
        precision_flips=len(flips), forced_departures=len(departed), precision_flip_limit=max_flips,
        confident_divergences=len(confident),
        reference_pass=sum(ok_ref), candidate_pass=sum(ok_cand), longest_candidate_pass=longest_ok,
        lengths=tuple(p.tokens for p in grid[::len(depths)]), depths=tuple(depths), regressions_by_length=by_length,
        differ_by_length=differ_by_length, exact_lengths=all(p.exact for p in grid),
        refused_by_both=sum(r is not None for r in refused))
    ctx.check(NEEDLE_GRID, status, reason, finding,
        ev, started=t0, undecided=undecided,
        judged=Items(judged, "needle cells the candidate misses where the reference answers", limit + 1))


def _outcomes(outcomes: dict[int, Outcome]) -> str:
    """e.g. "2 both fail identically, 1 differs from the reference's repeatable answer"."""
    counts = {o: sum(1 for x in outcomes.values() if x is o) for o in Outcome}
    return ", ".join(f"{n} {o.value}" for o, n in counts.items() if n) or "none"
