"""The live verdict kept up to date: each look (`/verdict`) measures and adds only the pairs
stored since the last one, and gives the JSON judging the whole store afresh gives
(`verdict.judge_store(..., sticky=True)`): the same slices, alphas, e-values, firings, scores.

Carried from one look to the next:
- every pair's measures, in the store's measure cache (`measured.py`): taken once, read back only
  when a slice must be judged from its start, and by a restarted proxy;
- the slices' counts (`judge.SlicePlanner`): the plan is known without reading old pairs;
- the analysis (`analysis.Analysis`): each slice's counters, e-processes and deltas, fed the new
  pairs in stored order, so the sequential test looks at the same pairs in the same order;
- the long-session tallies (`sessions.SessionDecay`).

A slice is judged again from its start (from the cache: no pair is measured twice) when the plan
changes under it: it is new (a tenant reaching `min_slice_requests`), a critical measure starts to
apply to it (its first JSON request), or the alpha of one of its tests changed (the first
judgement fixes its slices' split, but a measure that starts to apply to one of them divides
that share anew). These are rare and bounded (slices × measures); otherwise a look costs the new
pairs, plus `Analysis.results` over every slice: McNemar's test from counts, the Wilcoxon test
from its carried statistic (`stats/signed_rank.py`: the new deltas ranked among the earlier ones,
then merged in: one memmove of the sorted deltas, about 1 ms per 10⁶), Hodges-Lehmann over a
fixed-size subsample — about 0.2 s at 10⁶ stored pairs, measured, almost all of it the fixed part.

A look reads the store up to its last pair when it starts; pairs the mirror commits meanwhile
wait for the next look. A look that fails before it changes anything (a stored row that is no
valid pair) changes nothing; one that fails while it adds forgets the carried state, and the
next look starts again from the cache.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from gatekeeper.json_types import JsonObject
from gatekeeper.traffic.analysis import Analysis, SliceKey, SliceState
from gatekeeper.traffic.judging import RequestFacts, SlicePlanner, facts_of
from gatekeeper.traffic.measures import Measures, Pair, measure
from gatekeeper.traffic.pair_of import pair_of
from gatekeeper.traffic.settings import ShadowSettings
from gatekeeper.traffic.store.interface import NumberedPair, PairStore
from gatekeeper.live.measured import Measured, decode, encode, measured_of, measures_version
from gatekeeper.live.sessions import SessionDecay
from gatekeeper.live.verdict import fixed_split, latched, no_pairs, verdict_of

CHUNK = 1000  # pairs measured and cached per transaction


class LiveJudgement:
    """The live verdict over a store, brought up to date look by look; not thread-safe: the
    admin server's judge calls `judge` under its lock. `measure` is gate 5's (a test counts its
    calls). Over a writable store (a replica's) it keeps each pair's measures in the store's
    cache; over a read-only one (`gatekeeper shadow verdict`) it reads the measures the replicas
    cached and measures only the pairs they lack, keeping nothing."""

    def __init__(self, store: PairStore, s: ShadowSettings, min_pairs: int | None = None,
                 measure: Callable[[Pair], Measures] = measure, version: str | None = None) -> None:
        self.store, self.s, self.min_pairs = store, s, min_pairs
        self._measure = measure
        store.use_measure_cache(version or measures_version())
        self._forget()

    def _forget(self) -> None:
        self.planner = SlicePlanner()
        self.analysis = Analysis([], self.s.thresholds(), {})
        self.sessions = SessionDecay()
        self.last = 0  # the last pair (seq) the carried state holds

    def judge(self) -> JsonObject:
        """The verdict JSON for the pairs stored so far, a ROLLBACK latched as `judge_store`'s."""
        upto = self.store.last_seq()
        if upto < self.last:  # not the store this state was carried over (pairs are never removed)
            self._forget()
        if upto == 0:
            return latched(self.store, no_pairs(self.s, self.min_pairs))
        planner, slices = self._plan(upto)
        try:
            self.analysis.slices = slices
            for m in self._measured(self.last, upto):
                self.analysis.add(m.pair, m.measures)
                self.sessions.add(m.session, m.round, m.measures)
            self.planner, self.last = planner, upto
        except BaseException:
            self._forget()
            raise
        data = verdict_of(self.s, self.min_pairs, self.analysis.results(), self.analysis.pairs, self.sessions.result())
        return latched(self.store, data)

    def _plan(self, upto: int) -> tuple[SlicePlanner, dict[SliceKey, SliceState]]:
        """The planner with the pairs up to `upto`, and the slices as the analysis must hold them
        before the new pairs are added: kept, or judged again from the start (changing nothing)."""
        self._measure_new(self.last, upto)
        planner = self.planner.copy()
        for facts in self._facts(self.last, upto):
            planner.add(facts)
        t = self.s.thresholds()
        plan = planner.plan(self.s.min_slice_requests)
        alphas = fixed_split(self.store, t)(plan)
        fresh = Analysis(plan, t, alphas)  # no pair yet: which tests each slice holds, at which alpha
        held = self.analysis.slices
        stale = {key: ms for key, ms in plan if key not in held or _alphas(fresh.slices[key]) != _alphas(held[key])}
        if stale:
            again = self._history(list(stale.items()), alphas)
            fresh.slices.update(again.slices)
        return planner, {key: fresh.slices[key] if key in stale else held[key] for key, _ in plan}

    def _history(self, plan: list[tuple[SliceKey, frozenset[str]]], alphas: dict[tuple[SliceKey, str], float]) -> Analysis:
        """`plan`'s slices judged over the pairs the carried state holds (read from the cache)."""
        t = self.s.thresholds()
        again = Analysis(plan, t, alphas)
        for m in self._measured(0, self.last):
            again.add(m.pair, m.measures)
        if again.pairs != self.analysis.pairs:  # the cache lost rows (another process emptied it): fill it, once
            self._measure_new(0, self.last)
            again = Analysis(plan, t, alphas)
            for m in self._measured(0, self.last):
                again.add(m.pair, m.measures)
        return again

    def _measure_new(self, after: int, upto: int) -> None:
        """Measure the pairs with `after` < seq ≤ `upto` the cache lacks, and keep their measures
        (a read-only store keeps nothing: `_measured` measures them as it reads them)."""
        if self.store.readonly:
            return
        rows = []
        for row in self.store.numbered_rows(after, upto, unmeasured=True):
            rows.append((row[0], encode(measured_of(row, self._measure))))
            if len(rows) == CHUNK:
                self.store.cache_measures(rows)
                rows = []
        if rows:
            self.store.cache_measures(rows)

    def _facts(self, after: int, upto: int) -> Iterator[RequestFacts]:
        """The request facts of the pairs with `after` < seq ≤ `upto`, in stored order (what the
        plan counts): a read-only store's pairs the cache lacks are read, not measured."""
        if not self.store.readonly:
            yield from (m.facts for m in self._measured(after, upto))
            return
        for seq, data, row in self.store.measured_rows(after, upto):
            m = None if data is None else decode(seq, data)
            yield m.facts if m is not None else facts_of(pair_of(*self._row(seq, row)[1:]))

    def _measured(self, after: int, upto: int) -> Iterator[Measured]:
        """The measured pairs with `after` < seq ≤ `upto`, in stored order: from the cache (a
        read-only store's pairs the cache lacks measured as they are read, and not kept)."""
        rows = ((seq, data, None) for seq, data in self.store.cached_measures(after, upto)) if not self.store.readonly \
            else self.store.measured_rows(after, upto)
        for seq, data, row in rows:
            m = None if data is None else decode(seq, data)
            if m is None:  # not measured yet (read-only), or a row this gatekeeper cannot read: measured (again)
                m = measured_of(self._row(seq, row), self._measure)
                if not self.store.readonly:
                    self.store.cache_measures([(seq, encode(m))])
            yield m

    def _row(self, seq: int, row: NumberedPair | None) -> NumberedPair:
        """The stored pair `seq` (read when not given)."""
        if row is None:
            [row] = self.store.numbered_rows(seq - 1, seq)
        return row


def _alphas(state: SliceState) -> dict[str, float | None]:
    """A slice's tests and their alpha (None: a non-critical measure, judged at the end)."""
    return {name: m.alpha for name, m in state.measures.items()}
