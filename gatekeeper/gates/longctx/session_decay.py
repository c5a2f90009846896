"""The session-decay check family: concurrent scripted sessions, scored round by round.

Checks:
- `longctx.session_decay` (statistical): the candidate's recall slope over rounds against the
  reference's, sessions as the unit (`decay.py`); FAIL when the mean excess decay is above
  `decay_max_excess_slope` and beyond chance; WARN when the reference recalls less than
  `decay_min_recall` at round 1, since a model that cannot recall cannot show decay. SQDR, as
  docs/bug-classes.md#sqdr defines it, is reported beside it.
- `longctx.session_recall` (statistical): whether the candidate recalls less than the
  reference over the sessions' rounds (a level drop without a slope), more than
  `recall_max_drop` and beyond chance.
- `longctx.session_agreement` (tolerance): how often the candidate's answer differs from the
  reference's on the identical request.
- `longctx.trigger_conditions`: the trigger conditions (docs/bug-classes.md#kv-reuse-triggers) the
  run exercised; WARN when some were absent, so a pass says what it did not cover.

The two statistical checks are one family: their p-values are Holm-adjusted together, so the
chance that either raises a false alarm is at most `decay_alpha` (measured by simulation:
`benchmarks/decay_false_alarms.py`). Answers that differ only at a near tie (asked again with
logprobs) count as agreeing in the agreement check.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import time

from gatekeeper.errors import EndpointError
from gatekeeper.detection import DetectionLimit, Items
from gatekeeper.evidence import Series, Table, TextPair
from gatekeeper.gates.interface import GateContext
from gatekeeper.gates.longctx.near_ties import near_ties, unreviewable
from gatekeeper.gates.longctx.checks import (SESSION_AGREEMENT, SESSION_DECAY, SESSION_RECALL, TRIGGER_CONDITIONS,
                                             AgreementFinding, DecayFinding, RecallFinding, SessionsSetAside,
                                             TriggerConditionsFinding)
from gatekeeper.gates.longctx.settings import LongContextSettings
from gatekeeper.gates.longctx import conditions as cond
from gatekeeper.gates.longctx.decay import Cell, Decay, detectable, score
from gatekeeper.gates.longctx.scrape import UsageSampler, delta, pool_tokens, scrape
from gatekeeper.gates.longctx.sessions import Round, SessionPlan, build_session
from gatekeeper.gates.longctx.tokens import TokenCounter
from gatekeeper.endpoints.fanout import fan_out, raise_first
from gatekeeper.gates.longctx.traffic import (
    Answer,
    Flight,
    both,
    failed_requests,
    cached_tokens,
    chat,
)
from gatekeeper.stats.holm import holm
from gatekeeper.results import Judgement, Status


MIN_SESSIONS_LEFT = 4  # sessions are the unit of the slope test: fewer cannot decide anything


def run(ctx: GateContext, s: LongContextSettings, counter: TokenCounter, max_prompt: int) -> None:
    """Script the sessions, drive both targets, record the three checks."""
    started = time.perf_counter()
    block = s.block_size
    plan = SessionPlan(s.decay_sessions, s.decay_rounds, s.decay_facts,
                       tuple(int(g) for g in s.decay_growth), block, max_prompt)
    ctx.progress(f"longctx: scripting {plan.sessions} sessions x {plan.rounds} rounds")
    sessions = raise_first(fan_out(lambda i: build_session(counter, plan, ctx.run.seed, i), list(range(plan.sessions)), 4))
    conc = max(1, s.decay_concurrency)
    ctx.progress(f"longctx: session decay, {sum(map(len, sessions))} requests per target at concurrency {conc}")
    before = scrape(ctx.candidate)

    def drive(ep) -> tuple[list[list[Answer]], int]:
        flight = Flight()
        answers = raise_first(fan_out(lambda sess: [chat(ep, r.messages, flight=flight, max_tokens=s.answer_tokens)
                                                    for r in sess], sessions, conc))  # chat() returns its errors
        return answers, ep.measured("longctx.session_decay.peak_in_flight", flight.peak)  # a replay's answers overlap by chance

    with UsageSampler(ctx.candidate) as sampler:
        (ref_ans, _), (cand_ans, peak) = both(drive, ctx.reference, ctx.candidate)
    after = scrape(ctx.candidate)
    lost = _set_aside(ctx, sessions, ref_ans, cand_ans, started)
    if lost is None:
        return
    sessions, ref_ans, cand_ans = ([x for i, x in enumerate(xs) if i not in lost] for xs in (sessions, ref_ans, cand_ans))
    rounds = [r for sess in sessions for r in sess]
    cells = [_cell(r, a, b) for sess, ra, ca in zip(sessions, ref_ans, cand_ans) for r, a, b in zip(sess, ra, ca)]
    cells, forgiven = _forgive_near_ties(ctx, s, cells, rounds)
    d = score(cells, ctx.run.seed)
    p_decay, p_recall = holm([d.p_value, d.recall_p_value])
    _decay_check(ctx, s, d, p_decay, cells, rounds, started)
    _recall_check(ctx, s, d, p_recall)
    _agreement_check(ctx, s, d, cells, forgiven)
    found = [
        cond.concurrency(peak, plan.sessions, sampler.max_running),
        cond.prefix_caching(delta(before, after, "vllm:prefix_cache_hits"), delta(before, after, "vllm:prefix_cache_queries"),
                            _sum_cached(cand_ans)),
        cond.eviction_pressure(sum(sorted(max((r.tokens for r in sess), default=0) for sess in sessions)[-conc:]),
                               pool_tokens(after, block), delta(before, after, "gatekeeper:blocks_evicted"),
                               sampler.max_usage),
        cond.block_boundaries([[r.tokens for r in sess] for sess in sessions], block),
        cond.uneven_growth([b.tokens - a.tokens for sess in sessions for a, b in itertools.pairwise(sess)]),
    ]
    _conditions_check(ctx, found, counter)


def _set_aside(ctx: GateContext, sessions: list[list[Round]], ref_ans: list[list[Answer]], cand_ans: list[list[Answer]],
               started: float) -> set[int] | None:
    """The sessions a failed request (after the client's retries) left incomplete on either side:
    each is set aside, unjudged, and the rest are judged (a session is the statistics' unit, so one
    failed request costs one session, not the phase). None, with an ERROR check, when fewer than
    `MIN_SESSIONS_LEFT` sessions are left to judge."""
    failed: dict[int, tuple[str, EndpointError]] = {}
    for role, answers in (("reference", ref_ans), ("candidate", cand_ans)):
        for i, sess in enumerate(answers):
            error = next((a for a in sess if isinstance(a, EndpointError)), None)
            if error is not None and i not in failed:
                failed[i] = (role, error)
    if not failed:
        return set()
    cells = sum(len(sessions[i]) for i in failed)
    ctx.not_judged("request failed", cells, failed_requests(*(answers[i] for answers in (ref_ans, cand_ans) for i in failed)))
    by_role = {role: sum(1 for r, _ in failed.values() if r == role) for role in ("reference", "candidate")}
    first_role, first = next(iter(failed.values()))
    what = (f"{len(failed)} of {len(sessions)} sessions ({cells} requests) set aside because a request failed after its "
            f"retries (" + ", ".join(f"{role} {n}" for role, n in by_role.items() if n) + f"); first, {first_role}: {first}")
    ctx.notes.append(f"longctx: session decay: {what}")
    if len(sessions) - len(failed) < MIN_SESSIONS_LEFT:
        ctx.check(SESSION_DECAY, Status.ERROR, f"too few sessions left to judge: {what}",
                  SessionsSetAside(error_kind=first.kind, role=first_role, sessions_set_aside=len(failed)), started=started,
                  failed=[e for _, e in failed.values()])
        return None
    return set(failed)


def _cell(r: Round, ref: Answer, cand: Answer) -> Cell:
    assert not isinstance(ref, EndpointError) and not isinstance(cand, EndpointError)
    a, b = ref.text.strip(), cand.text.strip()
    return Cell(session=r.session, round=r.index, tokens=r.tokens, ref_ok=a == r.answer, cand_ok=b == r.answer, agree=a == b,
                ref_text=a, cand_text=b)


def _sum_cached(answers: list[list[Answer]]) -> int | None:
    values = [cached_tokens(a) for sess in answers for a in sess]
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _curve(d: Decay, is_key: bool = False) -> Series:
    """The decay curve; `is_key` on the one `longctx.session_decay` carries (the others repeat it)."""
    return Series("recall by round (and the candidate's agreement with the reference)", d.rounds,
                  {"reference": d.ref_rates, "candidate": d.cand_rates, "agreement": d.agreement}, "round", "pass rate",
                  is_key=is_key)


def _forgive_near_ties(ctx: GateContext, s: LongContextSettings, cells: list[Cell],
                       rounds: list[Round]) -> tuple[list[Cell], int]:
    """Cells whose answers differ only at a near tie count as agreeing; how many did."""
    differ = [i for i, c in enumerate(cells) if not c.agree]
    by_cell = {(r.session, r.index): r for r in rounds}
    ties = near_ties(ctx, s, [by_cell[(cells[i].session, cells[i].round)].messages for i in differ], s.answer_tokens)
    tied = {i for i, tie in zip(differ, ties) if tie is not None}
    return [dataclasses.replace(c, agree=True) if i in tied else c for i, c in enumerate(cells)], len(tied)


def _verdict(value: float, limit: float, p_holm: float, alpha: float) -> Status:
    """Statistical: FAIL above the limit and beyond chance; WARN above it by chance; else PASS."""
    return Status.FAIL if value > limit and p_holm < alpha else Status.WARN if value > limit else Status.PASS


def decay_status(d: Decay, limit: float, p_holm: float, alpha: float) -> tuple[Status, str]:
    """The decay test's status, and a note where the candidate lost no cell. A steeper slope with
    no (session, round) cell that the reference recalls and the candidate misses comes from rounds
    the candidate recalls *better* (early ones: a declared bf16 build recalling two more cells of
    144 read +0.0052/round against the 0.005 limit): its recall is at least the reference's in
    every round, so no round got worse — a PASS, not a decay to decide."""
    status = _verdict(d.excess_slope, limit, p_holm, alpha)
    if status is not Status.PASS and d.regressions == 0:
        return Status.PASS, (f"no decay: the candidate recalls every (session, round) cell the reference recalls "
                             f"({d.improvements} more), so its steeper slope comes from rounds it recalls better; ")
    return status, ""


def _test_text(d: Decay, p: float, p_holm: float) -> str:
    return (f"permutation test over {d.sessions} sessions p={p:.2g}, Holm-adjusted over the 2 decay tests "
            f"p={p_holm:.2g}")


def _decay_check(ctx: GateContext, s: LongContextSettings, d: Decay, p_holm: float, cells: list[Cell],
                 rounds: list[Round], t0: float) -> None:
    limit, alpha = s.decay_max_excess_slope, s.decay_alpha
    status, dominates = decay_status(d, limit, p_holm, alpha)
    weak = d.ref_rates[0] < s.decay_min_recall if d.ref_rates else True
    why = dominates + (f"the candidate's recall falls {d.excess_slope:+.4f}/round faster than the reference's (mean per-session "
           f"slope difference, limit {limit:g}; one cell moves it at most {d.one_cell:.4f}); "
           f"{_test_text(d, d.p_value, p_holm)}; {d.regressions} (session, round) cells the reference recalls and the "
           f"candidate does not, {d.improvements} the other way; SQDR candidate {d.sqdr_cand:.4f}/round, "
           f"reference {d.sqdr_ref:.4f}")
    undecided = status is Status.WARN
    if undecided:
        why = f"undecided: above the limit but within chance at alpha {alpha:g}; " + why
    if weak and status is Status.PASS:
        status, undecided = Status.WARN, True  # a decay the model cannot show is not a pass
        first = d.ref_rates[0] if d.ref_rates else 0
        why = (f"undecided: neither target recalls enough to measure decay (the reference recalls {first:.0%} "
               f"at round 1, below decay_min_recall {s.decay_min_recall:g}): the sessions are judged by "
               f"longctx.session_agreement; " + why)
    table = Table("per round", ["round", "median tokens", "reference recall", "candidate recall", "agreement"],
                  [[r, _median([c.tokens for c in cells if c.round == r]), round(a, 3), round(b, 3), round(g, 3)]
                   for r, a, b, g in zip(d.rounds, d.ref_rates, d.cand_rates, d.agreement)])
    ev = [_curve(d, is_key=True), table]
    worst = next((c for c in cells if c.ref_ok and not c.cand_ok), None)
    if worst is not None:
        ev.append(_pair(worst, rounds))
    finding = DecayFinding(
        excess_slope=d.excess_slope, limit=limit, p_value=d.p_value, p_holm=p_holm, alpha=alpha,
        sessions=d.sessions, one_cell=d.one_cell, reference_slopes=tuple(d.ref_slopes), candidate_slopes=tuple(d.cand_slopes),
        sqdr_reference=d.sqdr_ref, sqdr_candidate=d.sqdr_cand, sqdr_excess=d.excess,
        regressions=d.regressions, improvements=d.improvements, cells=d.cells,
        reference_by_round=tuple(d.ref_rates), candidate_by_round=tuple(d.cand_rates))
    ctx.check(SESSION_DECAY, status, why, finding, ev, started=t0,
        judgement=Judgement.STATISTICAL, undecided=undecided,
        limit=DetectionLimit(detectable(d.ref_slopes, d.cand_slopes, limit, alpha), "faster recall decay than the "
                             "reference's, as a mean per-session slope", "recall/round", judged=d.sessions))


def _recall_check(ctx: GateContext, s: LongContextSettings, d: Decay, p_holm: float) -> None:
    limit, alpha = s.recall_max_drop, s.decay_alpha
    status = _verdict(d.recall_drop, limit, p_holm, alpha)
    why = (f"the candidate recalls {d.recall_drop:+.3f} less than the reference over the sessions' rounds (mean per-session "
           f"recall difference, limit {limit:g}; one cell moves it at most {d.one_cell_recall:.4f}); "
           f"{_test_text(d, d.recall_p_value, p_holm)}")
    undecided = status is Status.WARN
    if undecided:
        why = f"undecided: above the limit but within chance at alpha {alpha:g}; " + why
    first = d.ref_rates[0] if d.ref_rates else 0.0
    if status is Status.PASS and first < s.decay_min_recall:  # a reference that recalls nothing cannot be fallen below
        status, undecided = Status.WARN, True
        why = (f"undecided: the reference recalls {first:.0%} at round 1, below decay_min_recall {s.decay_min_recall:g}, "
               "so a recall drop cannot show: the sessions are judged by longctx.session_agreement; " + why)
    finding = RecallFinding(
        recall_drop=d.recall_drop, limit=limit, p_value=d.recall_p_value, p_holm=p_holm, alpha=alpha,
        sessions=d.sessions, one_cell=d.one_cell_recall, reference_recall=tuple(d.ref_recall),
        candidate_recall=tuple(d.cand_recall))
    ctx.check(SESSION_RECALL, status, why, finding, [_curve(d)] if status is not Status.PASS else [],
        judgement=Judgement.STATISTICAL, undecided=undecided,
        limit=DetectionLimit(detectable(d.ref_recall, d.cand_recall, limit, alpha), "rounds recalled less than by the "
                             "reference, as a mean per session", judged=d.sessions))


def _agreement_check(ctx: GateContext, s: LongContextSettings, d: Decay, cells: list[Cell], forgiven: int) -> None:
    ctx.judged(d.cells)  # every (session, round) cell is compared with the reference's answer
    limit = s.max_disagreement
    rate = d.disagreements / d.cells if d.cells else 0.0
    first = next((c for c in cells if not c.agree), None)
    where = f"; first at session {first.session} round {first.round}" if first else ""
    ctx.check(SESSION_AGREEMENT, Status.FAIL if rate > limit else Status.PASS,
              f"the candidate's answer differs from the reference's in {d.disagreements} of {d.cells} identical requests "
              f"({rate:.1%}, limit {limit:.0%}){where}"
              + (f"; {forgiven} more differ at a near tie (noise: asked again with logprobs, each side's token is in the "
                 f"other's top-k within the dtype's gap or drift)" if forgiven else "")
              + (f"; {why}" if d.disagreements and (why := unreviewable(ctx, s)) else ""),
              AgreementFinding(disagreements=d.disagreements, near_ties=forgiven, cells=d.cells, rate=rate, limit=limit,
                               agreement_by_round=tuple(d.agreement)), [_curve(d)] if first else [],
              judgement=Judgement.TOLERANCE,
              judged=Items(d.cells - forgiven, "session answers differing from the reference's", math.floor(limit * d.cells) + 1))


def _conditions_check(ctx: GateContext, found: list[cond.Condition], counter: TokenCounter) -> None:
    absent = [c for c in found if c.present is not True]
    lines = [f"{c.name}: {c.label} — {c.detail}" for c in found]
    if counter.estimated:
        lines.append(f"token counts are estimated ({counter.why_estimated})")
    table = Table("KV-reuse trigger conditions (candidate)", ["condition", "exercised", "evidence"],
                  [[c.name, c.label, c.detail] for c in found])
    reason = ("all of the KV-reuse bug's trigger conditions were exercised" if not absent else
              "not exercised: " + "; ".join(f"{c.name} ({c.label}: {c.detail})" for c in absent))
    ctx.notes.append("session decay trigger conditions — " + "; ".join(lines))
    ctx.check(TRIGGER_CONDITIONS, Status.WARN if absent else Status.PASS, reason,
              TriggerConditionsFinding(conditions={c.name: c.label for c in found}), [table])


def _median(xs: list[int]) -> int:
    return sorted(xs)[len(xs) // 2] if xs else 0


def _pair(c: Cell, rounds: list[Round]) -> TextPair:
    r = next(x for x in rounds if x.session == c.session and x.index == c.round)
    return TextPair(f"session {c.session}, round {c.round} ({c.tokens} tokens): expected {r.answer!r}", c.ref_text,
                    c.cand_text, _diverge(c.ref_text, c.cand_text), r.messages[-1]["content"])


def _diverge(a: str, b: str) -> int | None:
    if a == b:
        return None
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
