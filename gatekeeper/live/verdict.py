"""The live verdict: gate 5's analysis and pair rules over the pairs a store holds, as the
`/verdict` JSON and the `/metrics` figures a progressive-delivery controller reads.

- ROLLBACK: a pair rule fired (a critical measure's sequential test, beyond the twin's noise
  floor and Diffy's margins), or the score fell below `score_marginal`;
- PROMOTE: at least `min_pairs` pairs were judged (the policy's stage budgets summed, unless
  given), nothing fired, and every rule's bound rules out an excess beyond its materiality;
- HOLD: still collecting (fewer judged pairs), nothing could be judged, or a rule is undecided
  (its bound still wider than the materiality: the reason says about how many pairs would decide it).
- a ROLLBACK is sticky in the live proxy: latched in the store, it stays until an operator
  resets it, whatever later pairs show. A pair whose
  reference failed says nothing about the candidate and is not counted as judged; a twin that
  failed counts as the candidate's failures do (the noise floor of transient errors).

The live verdict is brought up to date as pairs arrive (`judgement.py`: only the new pairs are
measured; `judge_store` judges a store from scratch, with the same JSON), and new tenants or
kinds bring new slices. The alpha split never shrinks an alpha once given
(`analysis.allocate_live`): the declared slices (the policy's `slice_weights`, else the first
judgement's) share alpha × (1 − `slice_reserve`), each over every critical measure whether it
applies yet or not; each slice discovered later draws on the reserve (the j-th gets
alpha × slice_reserve × 2^−j), its order kept in the store, so together they never exceed alpha.

`stage` names the policy's canary stage the judged count has reached (stages fill in order,
by their budgets); the stages' tenant and kind filters are applied by `gatekeeper run --gates
shadow --shadow-store`, which judges a store as a replay judges its traffic.
"""

from __future__ import annotations

from collections.abc import Callable

from gatekeeper.json_types import JsonObject
from gatekeeper.traffic.analysis import SliceKey, SliceResult, Thresholds, allocate_live
from gatekeeper.traffic.judging import judge_pairs
from gatekeeper.traffic import stage_rule
from gatekeeper.traffic.rules import PAIR_RULES, pair_rule
from gatekeeper.traffic.stage_rule import Standing
from gatekeeper.traffic.settings import ShadowSettings
from gatekeeper.live.sessions import session_decay
from gatekeeper.traffic.pair_of import pair_of, pairs
from gatekeeper.traffic.store.interface import PairStore
from gatekeeper.results import Status

RATES = ("disagreement", "task_failure", "degeneration", "json_parse", "tool_parse", "error", "retry", "nonfinite")


def default_min_pairs(s: ShadowSettings) -> int:
    """The pairs judged before a PROMOTE: every stage's budget."""
    return sum(stage.budget for stage in s.stage_plan())


def _stage(s: ShadowSettings, judged: int) -> str:
    total = 0
    for stage in s.stage_plan():
        total += stage.budget
        if judged < total:
            return stage.name
    return "complete"


def judge_store(store: PairStore, s: ShadowSettings, min_pairs: int | None = None, sticky: bool = False) -> JsonObject:
    """The verdict JSON for the pairs stored so far, judged from scratch. `sticky` (the live
    proxy): a ROLLBACK is latched in the store, and later pairs — clean ones from a new tenant,
    say — do not turn it back into HOLD or PROMOTE until an operator resets it (`POST
    /verdict/reset`). The live proxy keeps its verdict up to date instead (`judgement.py`),
    with the same JSON. `sticky` over a read-only store is `gatekeeper shadow verdict`: the
    live verdict every replica gives (the latch and the slices' alpha split read, not written)."""
    data = _judge(store, s, min_pairs, fixed=sticky)
    return latched(store, data) if sticky else data


def latched(store: PairStore, data: JsonObject) -> JsonObject:
    """The live verdict: a ROLLBACK latched in the store, or the one latched before it. A store
    opened read-only (`gatekeeper shadow verdict`) latches nothing: a ROLLBACK no replica has
    latched yet shows the entry a replica's look would latch, with `at` None."""
    if data["verdict"] == "ROLLBACK":
        if store.readonly:
            data["latched"] = store.latched() or {"reason": data["reason"], "judged": data["judged"],
                                                  "pairs": data["pairs"], "at": None}
        else:
            data["latched"] = store.latch(data)
        return data
    entry = store.latched()
    if entry is not None:
        data.update(verdict="ROLLBACK", latched=entry,
                    reason=f"latched: rolled back after {entry['judged']} judged pairs ({entry['reason']}); now "
                           f"{data['reason']}; POST /verdict/reset on the admin address to clear it")
    return data


def fixed_split(store: PairStore, t: Thresholds) -> Callable[[list[tuple[SliceKey, frozenset[str]]]],
                                                               dict[tuple[SliceKey, str], float]]:
    """The alpha per (slice, measure) of the live verdict: the declared slices keep their split,
    later ones draw on the reserve, in the order the store keeps."""
    def split(plan: list[tuple[SliceKey, frozenset[str]]]) -> dict[tuple[SliceKey, str], float]:
        order, first = store.slice_order([str(k) for k, _ in plan])
        return allocate_live(plan, t, order, first)
    return split


def _judge(store: PairStore, s: ShadowSettings, min_pairs: int | None, fixed: bool) -> JsonObject:
    if len(store) == 0:
        return no_pairs(s, min_pairs)
    analysis = judge_pairs(lambda: pairs(store), s.thresholds(), s.min_slice_requests,
                           fixed_split(store, s.thresholds()) if fixed else None)
    return verdict_of(s, min_pairs, analysis.results(), analysis.pairs,
                      session_decay((row[0], pair_of(*row)) for row in store.rows()))


def no_pairs(s: ShadowSettings, min_pairs: int | None) -> JsonObject:
    """The verdict before any pair is stored."""
    need = default_min_pairs(s) if min_pairs is None else min_pairs
    return {"verdict": "HOLD", "reason": f"collecting: no pair stored yet (0 of {need})", "stage": _stage(s, 0),
            "pairs": 0, "judged": 0, "min_pairs": need, "unjudged": {}, "score": None, "rules": {}, "rates": {},
            "fired": [], "slices": [], "sessions": None}


def verdict_of(s: ShadowSettings, min_pairs: int | None, slices: list[SliceResult], num_pairs: int,
               sessions: JsonObject | None) -> JsonObject:
    """The verdict JSON from the analysis' slices (of `num_pairs` pairs) and the sessions' SQDR."""
    need = default_min_pairs(s) if min_pairs is None else min_pairs
    overall = next(sl for sl in slices if sl.key == "all")
    rules = {name: pair_rule(name, slices) for name in PAIR_RULES}
    fired = [f"{name}: {r.reason}" for name, r in rules.items() if r.status is Status.FAIL]
    standing = stage_rule.standing(bool(fired), overall.judged, overall.score, s.score_marginal, s.score_pass)
    if standing is Standing.FIRED:
        verdict, why = "ROLLBACK", fired[0]
    elif standing is Standing.BELOW_MARGINAL:
        verdict, why = "ROLLBACK", f"score {overall.score:g} below score_marginal {s.score_marginal:g}"
    elif overall.judged < need:
        verdict, why = "HOLD", f"collecting: {overall.judged} of {need} pairs judged" + (
            f" ({', '.join(f'{n} {k}' for k, n in overall.unjudged.items())} not judged)" if overall.unjudged else "")
    elif undecided := [(name, r) for name, r in rules.items() if r.undecided]:
        name, r = undecided[0]
        assert r.limit is not None
        verdict, why = "HOLD", (f"undecided: {name} {r.limit.text()}, wider than the materiality"
                                + (f"; {r.decide}" if r.decide else ""))
    else:
        verdict, why = "PROMOTE", f"{overall.judged} pairs judged: no measure beyond the noise floor; score {overall.score:g}"
    by = {m.name: m for m in overall.metrics}
    rates = {name: {"candidate": by[name].candidate_rate, "twin": by[name].twin_rate, "eligible": by[name].eligible}
             for name in RATES if name in by}
    return {
        "verdict": verdict,
        "reason": why,
        "stage": _stage(s, overall.judged),
        "pairs": num_pairs,
        "judged": overall.judged,
        "min_pairs": need,
        "unjudged": dict(overall.unjudged),
        "score": overall.score,
        "rules": {name: {"status": r.status.value, "reason": r.reason,
                         "limit": None if r.limit is None else {"upper": r.limit.effect, "materiality": r.limit.materiality,
                                                                "measure": r.limit.measure, "text": r.limit.text()},
                         "pairs_to_decide": r.to_decide} for name, r in rules.items()},
        "rates": rates,
        "fired": [{"slice": sl.key, "measure": m.name, "candidate": m.candidate_rate, "twin": m.twin_rate,
                   "after_pairs": m.fired_at} for sl in slices for m in sl.fired],
        "slices": [{"slice": sl.key, "pairs": sl.pairs, "judged": sl.judged, "score": sl.score} for sl in slices],
        "sessions": sessions,
    }
