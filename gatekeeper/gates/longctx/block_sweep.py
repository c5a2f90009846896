"""The KV-block-boundary sweep: prompts of exactly B·k−1, B·k and B·k+1 tokens.

Off-by-one errors in paged caches live at block edges: the last partial block, a prompt that
fills its blocks exactly, a prefix-cache hit that must stop one token short. For each policy
length (rounded to a multiple of the block size B) the three prompts share their filler and
secret and differ only in padding; they are sent in order, so on a prefix-caching target the
later ones hit the earlier ones' blocks. Each answer must equal the reference's
(`longctx.block_boundary`, limit `boundary_max_mismatches`, 0 by default), except where the
reference does not repeat its own answer on a second pass (`noise_floor_concurrency`).
"""

from __future__ import annotations

import random
import time

from gatekeeper.detection import Items
from gatekeeper.evidence import Table
from gatekeeper.gates.interface import GateContext
from gatekeeper.gates.longctx.checks import BLOCK_BOUNDARY, BoundaryFinding
from gatekeeper.gates.longctx.settings import LongContextSettings
from gatekeeper.stats import noise
from gatekeeper.gates.longctx.near_ties import near_ties
from gatekeeper.gates.longctx.prompts import NeedlePrompt, padded_variants
from gatekeeper.gates.longctx.tokens import TokenCounter
from gatekeeper.gates.longctx.traffic import (
    Answer,
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

OFFSETS = [-1, 0, 1]


def run(ctx: GateContext, s: LongContextSettings, counter: TokenCounter, max_prompt: int) -> None:
    """Build the triples, ask both targets, record `longctx.block_boundary`."""
    t0 = time.perf_counter()
    block = s.block_size
    centers = sorted({min(int(n), max_prompt - 1) // block * block for n in s.boundary_tokens} - {0})
    triples = [padded_variants(counter, random.Random(f"{ctx.run.seed}:longctx:boundary:{c}"), c, OFFSETS) for c in centers]
    ctx.progress(f"longctx: block-boundary sweep at {centers} (B={block})")
    limit = s.answer_tokens

    def triple(ep, tri: list[NeedlePrompt]) -> list[Answer]:
        return [chat(ep, p.messages, max_tokens=limit) for p in tri]

    conc = s.concurrency
    ref, ref2, cand = side_by_side(triple, triples, ctx.reference, ctx.candidate, conc, s.noise_floor_concurrency)
    flat: list[tuple[NeedlePrompt, Answer, Answer]] = [x for t, a, b in zip(triples, ref, cand) for x in zip(t, a, b)]
    ref2_flat = [a for t in ref2 or [] for a in t]
    refusal = refused_by_both([x[1] for x in flat], [x[2] for x in flat], ref2_flat)
    if refusal is not None:
        ctx.refused_by_both(BLOCK_BOUNDARY, refusal, len(flat))
        return
    refused = refused_each([x[1] for x in flat], [x[2] for x in flat], ref2_flat)  # past both contexts: the rest is judged
    flat, ref2_flat, asked = kept(flat, refused), kept(ref2_flat, refused), len(flat)
    err = first_error([x[1] for x in flat], [x[2] for x in flat], ref2_flat)
    if err is not None:
        ctx.error_check(BLOCK_BOUNDARY, err)
        ctx.not_judged("request failed", len(flat), failed_requests([x[1] for x in flat], [x[2] for x in flat], ref2_flat))
        ctx.not_judged("both fail identically", asked - len(flat))
        return
    noisy = unstable([x[1] for x in flat], None if ref2 is None else ref2_flat)
    differ = [i for i, ((_, a, b), shaky) in enumerate(zip(flat, noisy)) if text(a) != text(b) and not shaky]
    tie_at = dict(zip(differ, near_ties(ctx, s, [flat[i][0].messages for i in differ], limit)))
    rows, bad = [], []
    for i, ((p, a, b), shaky) in enumerate(zip(flat, noisy)):
        same = text(a) == text(b)
        if not same and not shaky and tie_at.get(i) is None:
            bad.append(p.tokens)
        rows.append([p.tokens, f"B·{p.tokens // block}{'' if p.tokens % block == 0 else '+1' if p.tokens % block == 1 else ''}"
                     if p.tokens % block in (0, 1) else f"B·{p.tokens // block + 1}−1", p.value, text(a), text(b),
                     "same" if same else "differs (reference unstable)" if shaky else
                     "differs at a near tie (noise)" if tie_at.get(i) else "DIFFERENT"])
    inexact = [p.tokens for p, _, _ in flat if not p.exact]
    note = f"; {sum(noisy)} answers the reference itself does not repeat (noise, not judged)" if any(noisy) else ""
    ties = sum(1 for d in tie_at.values() if d is not None)
    note += f"; {ties} differ at a near tie (noise)" if ties else ""
    if inexact:
        note += f"; lengths not exact ({'estimated' if counter.estimated else 'could not pad exactly'}): {inexact}"
    mm = s.boundary_max_mismatches
    ctx.notes.append(noise.describe("block-boundary sweep", sum(noisy), len(flat), conc, s.noise_floor_concurrency))
    judged = len(flat) - sum(noisy) - ties  # a near tie is noise: neither a difference nor an agreement
    ctx.judged(judged)
    ctx.not_judged("reference unstable", sum(noisy))
    ctx.not_judged("near tie", ties)
    ctx.not_judged("both fail identically", asked - len(flat))
    ctx.check(BLOCK_BOUNDARY, Status.FAIL if len(bad) > mm else Status.PASS,
              f"{len(bad)} of {len(flat)} boundary-length answers differ from the reference (limit {mm})"
              + (f" at {bad} tokens" if bad else "") + note + refused_note(refused),
              BoundaryFinding(lengths=tuple(p.tokens for p, _, _ in flat), mismatches=len(bad), block_size=block,
                              exact_lengths=not inexact, refused_by_both=asked - len(flat)),
              [Table(f"block-boundary sweep (B={block})", ["tokens", "position", "secret", "reference", "candidate", ""], rows)],
              started=t0, judged=Items(judged, "boundary-length answers differing from the reference's", mm + 1))
