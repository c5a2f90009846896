"""Prefix-cache consistency: a cache hit must give the same answer as a miss.

`longctx.prefix_cache.cold_warm`: one long prompt no earlier request shares, sent to the
candidate twice in a row (cold, then warm) and to the reference; greedy answers must all be
equal. The warm request's cached tokens (from the response or the metrics) show whether the
cache was actually hit — if not, the reason says the comparison did not exercise it.

`longctx.prefix_cache.shared_prefix`: one long context holding several secrets, asked about
each in turn by requests that share it as a prefix and differ only in the question, interleaved
with unrelated long prompts that churn the cache, all in flight together. Each answer must equal
the reference's; a mismatch beyond `prefix_max_mismatches` (0) fails. Unless `noise_floor_concurrency` is 0, the
reference answers everything twice (the second time at another concurrency), and an answer it
does not repeat is noise, not held against the candidate.
"""

from __future__ import annotations

import random
import time

from gatekeeper.detection import Items, exact
from gatekeeper.evidence import JsonValue, Table, TextPair
from gatekeeper.gates.interface import GateContext
from gatekeeper.gates.longctx.checks import COLD_WARM, SHARED_PREFIX, ColdWarmFinding, SharedPrefixFinding
from gatekeeper.gates.longctx.settings import LongContextSettings
from gatekeeper.stats import noise
from gatekeeper.gates.longctx import tasks
from gatekeeper.gates.longctx.near_ties import near_ties
from gatekeeper.gates.longctx.prompts import needle_prompts, words_for
from gatekeeper.gates.longctx.scrape import delta, scrape
from gatekeeper.gates.longctx.tokens import Messages, TokenCounter
from gatekeeper.gates.longctx.traffic import (
    cached_tokens,
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


def run(ctx: GateContext, s: LongContextSettings, counter: TokenCounter, max_prompt: int) -> None:
    """Both prefix-cache checks."""
    _cold_warm(ctx, s, counter, max_prompt)
    _shared_prefix(ctx, s, counter, max_prompt)


def _cold_warm(ctx: GateContext, s: LongContextSettings, counter: TokenCounter, max_prompt: int) -> None:
    t0 = time.perf_counter()
    n = min(s.prefix_tokens, max_prompt)
    prompt = needle_prompts(counter, random.Random(f"{ctx.run.seed}:longctx:coldwarm"), n, [0.3])[0]
    limit = s.answer_tokens
    ref = chat(ctx.reference, prompt.messages, max_tokens=limit)
    ref2 = chat(ctx.reference, prompt.messages, max_tokens=limit) if s.noise_floor_concurrency else ref
    cold = chat(ctx.candidate, prompt.messages, max_tokens=limit)
    before = scrape(ctx.candidate)
    warm = chat(ctx.candidate, prompt.messages, max_tokens=limit)
    after = scrape(ctx.candidate)
    refusal = refused_by_both([ref], [cold], [ref2], [warm])
    if refusal is not None:
        ctx.refused_by_both(COLD_WARM, refusal)
        return
    err = first_error([ref, ref2, cold, warm])
    if err is not None:
        ctx.error_check(COLD_WARM, err)
        ctx.not_judged("request failed", 1, failed_requests([ref, ref2, cold, warm]))
        return
    shaky = text(ref) != text(ref2)
    # A candidate that parts from the reference at a near tie: only cold = warm is judged.
    tie = text(cold) == text(warm) != text(ref) and not shaky and near_ties(ctx, s, [prompt.messages], limit)[0] is not None
    hits = cached_tokens(warm)
    if hits is None:
        d = delta(before, after, "vllm:prefix_cache_hits")
        hits = None if d is None else int(d)
    seen = ("the warm request was not served from the cache (0 cached tokens): this comparison did not exercise it"
            if hits == 0 else "cache use not observable" if hits is None else f"{hits} of {prompt.tokens} tokens served from the cache")
    texts = {"reference": text(ref), "cold": text(cold), "warm": text(warm)}
    same = len(set(texts.values())) == 1
    # Cold and warm must always agree; their agreement with the reference counts only where the
    # reference repeats its own answer (the noise floor).
    ok = texts["cold"] == texts["warm"] and (same or shaky or tie)
    ev = [] if same else [TextPair("cold vs warm (candidate)", texts["cold"], texts["warm"], 0, prompt.question),
                          JsonValue("answers", {**texts, "reference (second pass)": text(ref2)})]
    # Equal answers prove nothing about the cache when the warm request did not hit it.
    status = Status.FAIL if not ok else Status.SKIP if hits == 0 else Status.PASS
    if status is Status.SKIP:
        ctx.not_judged("no cache hit")
    else:
        ctx.judged()
    ctx.check(COLD_WARM, status,
              ("cold, warm and reference answers are equal" if same else
               f"answers differ: reference {texts['reference']!r}, cold {texts['cold']!r}, warm {texts['warm']!r}"
               + (" (the reference does not repeat its own answer: only cold = warm is judged)" if shaky else "")
               + (" (the candidate parts from the reference at a near tie: only cold = warm is judged)" if tie else ""))
              + f" ({prompt.tokens}-token prompt; {seen})",
              ColdWarmFinding(tokens=prompt.tokens, warm_cached_tokens=hits, reference=texts["reference"], cold=texts["cold"],
                              warm=texts["warm"]), ev, started=t0,
              limit=exact("difference between the cold and the warm answer" if shaky or tie else
                          "difference between the cold, the warm and the reference's answer"))


def _shared_context(counter: TokenCounter, rng: random.Random, target: int, kinds: list[str]) -> tuple[str, dict[str, str]]:
    """A filler text with one secret per kind spread through it, sized so that the context plus
    the longest question is at most `target` tokens."""
    pool = " ".join(tasks.filler(rng, max(8, target // 6))).split(" ")
    values = {k: tasks.needle_value(rng, k) for k in kinds}
    longest = max(kinds, key=lambda k: len(tasks.needle_question(k)))

    def context(n: int) -> str:
        words = pool[:n]
        ends = [i + 1 for i, w in enumerate(words) if w.endswith(".")] or [len(words)]
        for j, k in reversed(list(enumerate(kinds))):
            at = ends[min(len(ends) - 1, (j * len(ends)) // len(kinds))]
            words[at:at] = tasks.needle_sentence(k, values[k]).split(" ")
        return " ".join(words)

    def make(n: int) -> Messages:
        return [{"role": "user", "content": f"{context(n)}\n\n{tasks.needle_question(longest)}"}]

    return context(words_for(counter, make, target, target // 3)), values


def _shared_prefix(ctx: GateContext, s: LongContextSettings, counter: TokenCounter, max_prompt: int) -> None:
    t0 = time.perf_counter()
    rng = random.Random(f"{ctx.run.seed}:longctx:shared")
    kinds = list(tasks.NEEDLE_KINDS)[: max(1, s.prefix_suffixes)]
    context, values = _shared_context(counter, rng, min(s.prefix_tokens, max_prompt), kinds)
    asks: list[tuple[Messages, str | None]] = [
        ([{"role": "user", "content": f"{context}\n\n{tasks.needle_question(k)}"}], values[k]) for k in kinds]
    other: list[tuple[Messages, str | None]] = []
    for i in range(s.prefix_unrelated):
        size = min([256, 768, 1280][i % 3], max_prompt)
        other.append((needle_prompts(counter, rng, size, [rng.random()])[0].messages, None))
    items: list[tuple[Messages, str | None]] = []
    for i in range(max(len(asks), len(other))):
        items += asks[i:i + 1] + other[i:i + 1]
    limit, conc = s.answer_tokens, s.concurrency
    ref, ref2, cand = side_by_side(lambda ep, it: chat(ep, it[0], max_tokens=limit), items,
                                   ctx.reference, ctx.candidate, conc, s.noise_floor_concurrency)
    refusal = refused_by_both(ref, cand, ref2 or [])
    if refusal is not None:
        ctx.refused_by_both(SHARED_PREFIX, refusal, len(items))
        return
    refused = refused_each(ref, cand, ref2 or [])  # a prompt past both contexts: set aside, the rest judged
    asked = len(items)
    items, ref, cand = kept(items, refused), kept(ref, refused), kept(cand, refused)
    ref2 = None if ref2 is None else kept(ref2, refused)
    ctx.not_judged("both fail identically", asked - len(items))
    err = first_error(ref, cand, ref2 or [])
    if err is not None:
        ctx.error_check(SHARED_PREFIX, err)
        ctx.not_judged("request failed", len(items), failed_requests(ref, cand, ref2 or []))
        return
    rows, mismatches = [], 0
    shaky_items = unstable(ref, ref2)
    ctx.notes.append(noise.describe("shared prefix", sum(shaky_items), len(items), conc, s.noise_floor_concurrency))
    differ = [i for i, (a, b, shaky) in enumerate(zip(ref, cand, shaky_items)) if text(a) != text(b) and not shaky]
    tie_at = dict(zip(differ, near_ties(ctx, s, [items[i][0] for i in differ], limit)))
    ties = sum(1 for d in tie_at.values() if d is not None)
    judged = len(items) - sum(shaky_items) - ties  # a near tie is noise: neither a difference nor an agreement
    ctx.judged(judged)
    ctx.not_judged("reference unstable", sum(shaky_items))
    ctx.not_judged("near tie", ties)
    for i, ((messages, want), a, b, shaky) in enumerate(zip(items, ref, cand, shaky_items)):
        if want is None and text(a) == text(b):
            continue
        tie = tie_at.get(i) is not None
        mismatches += text(a) != text(b) and not shaky and not tie
        verdict = ("same" if text(a) == text(b) else "differs (reference unstable)" if shaky else
                   "differs at a near tie (noise)" if tie else "DIFFERENT")
        rows.append([(messages[-1]["content"] or "")[-60:], want or "(unrelated)", text(a), text(b), verdict])
    right = sum(1 for (_, want), b in zip(items, cand) if want is not None and text(b) == want)
    limit_mm = s.prefix_max_mismatches
    ctx.check(SHARED_PREFIX, Status.FAIL if mismatches > limit_mm else Status.PASS,
              f"{mismatches} of {len(items)} answers differ from the reference (limit {limit_mm}); {len(asks)} questions "
              f"share a long prefix among {len(other)} unrelated prompts; the candidate recalled {right} of {len(asks)} secrets"
              + refused_note(refused),
              SharedPrefixFinding(mismatches=mismatches, requests=len(items), shared=len(asks), candidate_recalled=right,
                                  refused_by_both=asked - len(items)),
              [Table("answers (questions on the shared prefix, and any unrelated prompt that differs)",
                     ["question", "secret", "reference", "candidate", ""], rows)], started=t0,
              judged=Items(judged, "answers on a shared prefix differing from the reference's", limit_mm + 1))
