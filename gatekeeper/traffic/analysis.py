"""Canary analysis of replayed pairs, per slice, streamed: nothing but counters, e-processes and
two float lists per slice are kept, so a million pairs never sit in memory.

Slices are the whole traffic (`all`) and every tenant, request kind, model alias and sampling
mode (`greedy` / `sampled`) with at least `min_slice_requests` selected requests. Each slice
judges:

- the **critical** measures (`disagreement`, `task_failure`, `degeneration`, `json_parse`,
  `tool_parse`, `error`, `retry`, `nonfinite`) with the anytime-valid paired e-process of
  `sequential.py`, updated after every pair. A measure *fires* when its e-value crosses 1/alpha_i,
  Diffy's relative rule holds (the candidate's excess over the twin is more than `noise_relative`
  of the two counts together) and the excess seen is above the measure's `materiality`: beyond
  the noise and of a size that matters. No absolute noise margin: with a materiality of half a
  point, half a point fires once the evidence is there. A crossing with the excess seen below the
  materiality fires nothing: *Immaterial* when its anytime 95% upper bound (`excess_bound.py`)
  lies within the materiality (a real, small excess: the rule WARNs), *Below materiality*
  otherwise (the rule is undecided until the bound decides). Every critical measure carries that
  upper bound: what a PASS rules out.
  alpha is split before the replay starts (Bonferroni over e-values, valid at every look):
  `primary_share` of it to `disagreement` over all traffic (the main measure: answers that differ
  from the reference's beyond a near tie, the one most faults show in soonest), half of the rest
  evenly over the other measures of all traffic, the other half evenly over every (slice,
  measure) test.
- the **non-critical** measures at the end of each stage, at Kayenta's fixed 98% confidence:
  `finish_reason` and `refusal` by McNemar's exact test (scipy's binomtest on the discordant
  pairs); `similarity` (candidate's minus the twin's, to the reference) and `length` (log length
  ratio, candidate's minus the twin's) by the Wilcoxon signed-rank test with the Hodges-Lehmann
  shift, classified High/Low only beyond their tolerance.

The slice score is Kayenta's: Pass / (Pass + High + Low) × 100 over its metrics (Nodata left
out, Immaterial and Below materiality counted as Pass), and 0 when a critical measure fired.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from gatekeeper.stats.hodges_lehmann import hodges_lehmann
from gatekeeper.stats.signed_rank import SignedRanks
from gatekeeper.traffic.excess_bound import upper_bound
from gatekeeper.traffic.measures import Measures, Pair
from gatekeeper.traffic.sequential import PairedEProcess

CRITICAL = ("disagreement", "task_failure", "degeneration", "json_parse", "tool_parse", "error", "retry", "nonfinite",
            "near_tie")
MATERIALITY: dict[str, float] = {
    "disagreement": 0.03, "task_failure": 0.03, "json_parse": 0.10, "tool_parse": 0.15, "degeneration": 0.02,
    "nonfinite": 0.02, "error": 0.02, "retry": 0.02, "near_tie": 0.10}
"""The default excess over the twin that matters, per critical measure, as a share of the pairs it
applies to (JSON pairs for `json_parse`, tool pairs for `tool_parse`): 3 points more answers changed
or tasks failed, a tenth more JSON broken (the shipped traffic's ~60 JSON pairs bound a clean run at
~6%), 15% more tool calls broken (~40 tool pairs bound a clean run at ~9%), 2 points more
degenerate, NaN or failed answers, or requests not answered at the first attempt, 10 points more
answers parting at a near tie (a declared bf16 candidate parts so on a few percent of answers; a
systematic shift of close calls on most). A PASS must rule
out more than this (docs/detection-limits.md)."""
NONCRITICAL_BINARY = ("finish_reason", "refusal")
CONTINUOUS = ("similarity", "length")


@dataclass(frozen=True)
class SliceKey:
    """What a pair belongs to: `all`, or dimension=value (tenant=acme, kind=tool...)."""

    dimension: str
    value: str

    def __str__(self) -> str:
        return "all" if self.dimension == "all" else f"{self.dimension}={self.value}"


SLICE_DIMENSIONS = ("tenant", "kind", "model", "sampling")
"""The dimensions a slice can be of, beside `all` (`slice_keys`)."""


def slice_keys(tenant: str, kind: str, model_alias: str, sampled: bool) -> list[SliceKey]:
    """Every slice a request counts in."""
    return [SliceKey("all", ""), SliceKey("tenant", tenant), SliceKey("kind", kind),
            SliceKey("model", model_alias or "-"), SliceKey("sampling", "sampled" if sampled else "greedy")]


@dataclass(frozen=True)
class Thresholds:
    """The analysis' policy: alpha and its split, Diffy's relative margin, Kayenta's confidence,
    the tolerances of the continuous metrics, the score thresholds, and each critical measure's
    materiality."""

    alpha: float = 0.05
    primary_share: float = 0.5
    noise_relative: float = 0.2
    confidence: float = 0.98
    similarity_tolerance: float = 0.02
    length_tolerance: float = 0.25
    score_pass: float = 75.0
    score_marginal: float = 50.0
    materiality: Mapping[str, float] = field(default_factory=lambda: dict(MATERIALITY))
    slice_weights: Mapping[str, float] = field(default_factory=dict)
    slice_reserve: float = 0.2

    def weight_of(self, key: SliceKey) -> float:
        """A slice's declared weight in the alpha split (1 where the policy declares none)."""
        return self.slice_weights.get(str(key), 1.0)

    def margin_of(self, measure: str) -> float:
        """The materiality of a critical measure (its default where the policy names none)."""
        return self.materiality.get(measure, MATERIALITY[measure])


def allocate(slices: Iterable[tuple[SliceKey, frozenset[str]]], t: Thresholds) -> dict[tuple[SliceKey, str], float]:
    """alpha per (slice, critical measure), fixed before any pair is seen: the slices and the
    measures that apply to them come from the selected requests alone. The other slices' half of
    what `disagreement` over all traffic leaves goes to the other slices' (slice, measure) tests,
    each test weighted by its slice's declared weight (`slice_weights`; 1 by default: an even split)."""
    slices = list(slices)
    primary = [(k, m) for k, ms in slices if k.dimension == "all" for m in CRITICAL if m in ms and m == "disagreement"]
    overall = [(k, m) for k, ms in slices if k.dimension == "all" for m in CRITICAL if m in ms and m != "disagreement"]
    rest = [(k, ms) for k, ms in slices if k.dimension != "all" and any(m in CRITICAL for m in ms)]
    left = 1.0 - (t.primary_share if primary else 0.0)
    share = left / (bool(overall) + bool(rest)) if overall or rest else 0.0
    out: dict[tuple[SliceKey, str], float] = {key: t.alpha * t.primary_share for key in primary[:1]}
    for key in overall:
        out[key] = t.alpha * share / len(overall)
    total = sum(t.weight_of(k) * sum(m in CRITICAL for m in ms) for k, ms in rest)
    for k, ms in rest:
        for m in CRITICAL:
            if m in ms:
                out[(k, m)] = t.alpha * share * t.weight_of(k) / total
    return out


def allocate_live(slices: Iterable[tuple[SliceKey, frozenset[str]]], t: Thresholds, order: Sequence[str],
                  first: int) -> dict[tuple[SliceKey, str], float]:
    """alpha per (slice, critical measure) for a judgement repeated as pairs arrive (the live
    verdict), such that an alpha once given never shrinks: every share is fixed by the policy and
    the order slices appeared in (`order`, the first judgement's `first` of them), never by what
    applies now. alpha × (1 − `slice_reserve`) goes to the declared slices — the policy's
    `slice_weights` (a tenant declared there has its alpha before its first pair), else the first
    judgement's slices, weight 1 — as `allocate` splits it, each slice's share divided by all
    `len(CRITICAL)` measures, whether they apply yet or not (a measure that starts to apply, the
    first JSON request of a tenant, takes the share kept for it); the j-th slice discovered later
    gets alpha × slice_reserve × 2^−j, likewise per measure. The whole never exceeds alpha,
    however many slices appear (Bonferroni over a summable sequence)."""
    main, n = t.alpha * (1 - t.slice_reserve), len(CRITICAL)
    declared = dict(t.slice_weights) or {k: 1.0 for k in order[:first] if k != "all"}
    share = (1 - t.primary_share) / (2 if declared else 1)
    discovered = [k for k in order if k != "all" and k not in declared]
    out: dict[tuple[SliceKey, str], float] = {}
    for k, ms in slices:
        name = str(k)
        per = (main * share / (n - 1) if name == "all" else main * share * declared[name] / sum(declared.values()) / n
               if name in declared else t.alpha * t.slice_reserve * 2.0 ** -(discovered.index(name) + 1) / n)
        for m in ms:
            out[(k, m)] = main * t.primary_share if (name, m) == ("all", "disagreement") else per
    return out


@dataclass
class MeasureState:
    """One (slice, measure): counts, its e-process (critical measures), and when it fired."""

    alpha: float | None  # None: a non-critical measure (no e-process)
    eligible: int = 0
    candidate_bad: int = 0
    twin_bad: int = 0
    candidate_only: int = 0  # discordant pairs: the candidate bad, the twin fine
    twin_only: int = 0  # and the reverse
    eproc: PairedEProcess | None = None
    fired_at: int | None = None  # the slice's judged-pair count at the firing

    def margin(self, t: Thresholds) -> bool:
        """Diffy's relative rule: the excess over the twin is more than `noise_relative` of the two counts."""
        raw, noise = self.candidate_bad, self.twin_bad
        if raw <= noise or self.eligible == 0:
            return False
        return (raw - noise) / (raw + noise) > t.noise_relative

    def upper(self) -> float | None:
        """The anytime 95% upper bound of the excess over the twin (None before any eligible pair)."""
        if not self.eligible:
            return None
        return upper_bound(self.candidate_only, self.twin_only, self.eligible - self.candidate_only - self.twin_only)

    def material(self, margin: float) -> bool:
        """Whether a crossing may fire: the excess seen is above the materiality (a real excess
        estimated below it fires nothing: its bound decides between PASS, WARN and undecided)."""
        return self.eligible > 0 and (self.candidate_bad - self.twin_bad) / self.eligible > margin


@dataclass
class SliceState:
    """The running state of one slice."""

    key: SliceKey
    measures: dict[str, MeasureState]
    pairs: int = 0
    judged: int = 0
    unjudged: dict[str, int] = field(default_factory=dict)
    sim_delta: SignedRanks = field(default_factory=SignedRanks)  # 16 bytes per pair: bounded, not the pairs
    len_delta: SignedRanks = field(default_factory=SignedRanks)


@dataclass(frozen=True, kw_only=True)
class MetricResult:
    """One metric of one slice: `label` Pass / High / Low / Nodata / Fired, the figures behind it."""

    name: str
    critical: bool
    label: str
    candidate_rate: float | None
    twin_rate: float | None
    eligible: int
    p_value: float | None
    e_value: float | None
    effect: float | None  # Hodges-Lehmann shift (continuous) or excess rate over the twin (binary)
    fired_at: int | None = None
    upper: float | None = None  # critical: the anytime 95% upper bound of the excess over the twin
    materiality: float | None = None  # critical: the excess that matters (the policy's)
    counts: tuple[int, int, int] = (0, 0, 0)  # critical: (candidate-only, twin-only, concordant) pairs
    alpha: float | None = None  # critical: the e-process's share of alpha (it fires at e ≥ 1/alpha)

    @property
    def near_miss(self) -> bool:
        """A critical measure that did not fire but came close: its e-value past half its threshold
        on a log scale (e ≥ √(1/alpha)), or an excess beyond the twin's noise estimated below the
        materiality."""
        if not self.critical or self.fired_at is not None:
            return False
        past_half = self.e_value is not None and self.alpha is not None and self.e_value >= (1 / self.alpha) ** 0.5
        return past_half or self.label in ("Immaterial", "Below materiality")

    @property
    def undecided(self) -> bool:
        """Critical, with data, not fired, its materiality not ruled out: "not shown worse", not "shown no worse"."""
        ruled_out = self.upper is not None and self.materiality is not None and self.upper <= self.materiality
        return self.critical and self.label == "Pass" and self.eligible > 0 and not ruled_out


@dataclass(frozen=True)
class SliceResult:
    """A slice's verdict inputs: its metrics, score and coverage."""

    key: str
    pairs: int
    judged: int
    unjudged: dict[str, int]
    metrics: tuple[MetricResult, ...]
    score: float

    @property
    def is_scored(self) -> bool:
        """The score rests on something: pairs were judged and a metric had data (else it is a
        default 100 that judged nothing, and is shown as "not judged")."""
        return self.judged > 0 and any(m.label != "Nodata" for m in self.metrics)

    @property
    def undecided(self) -> list[MetricResult]:
        """The critical metrics `MetricResult.undecided`."""
        return [m for m in self.metrics if m.undecided]

    @property
    def fired(self) -> list[MetricResult]:
        """The critical metrics that fired."""
        return [m for m in self.metrics if m.label == "Fired"]


class Analysis:
    """The canary analysis, fed pair by pair in replay order (`add`), read per slice (`results`)."""

    def __init__(self, slices: Iterable[tuple[SliceKey, frozenset[str]]], t: Thresholds,
                 alphas: dict[tuple[SliceKey, str], float] | None = None) -> None:
        self.t = t
        plan = list(slices)
        alphas = allocate(plan, t) if alphas is None else alphas
        self.slices: dict[SliceKey, SliceState] = {}
        for key, _ in plan:
            states = {}
            for m in CRITICAL + NONCRITICAL_BINARY:
                a = alphas.get((key, m))
                if m in CRITICAL and a is None:
                    continue
                states[m] = MeasureState(a, eproc=PairedEProcess(a) if a is not None else None)
            self.slices[key] = SliceState(key, states)
        self.first_fired_at: int | None = None  # pairs judged (overall) when any measure first fired
        self.pairs = 0

    def add(self, pair: Pair, m: Measures) -> None:
        """One pair, in replay order (the e-processes look after every pair)."""
        self.pairs += 1
        for key in slice_keys(pair.tenant, pair.kind, pair.model_alias, pair.sampled):
            s = self.slices.get(key)
            if s is None:
                continue
            s.pairs += 1
            if not m.judged:
                s.unjudged[m.why_not] = s.unjudged.get(m.why_not, 0) + 1
                continue
            s.judged += 1
            for name, (cand_bad, twin_bad) in m.bad.items():
                state = s.measures.get(name)
                if state is None:
                    continue
                state.eligible += 1
                state.candidate_bad += cand_bad
                state.twin_bad += twin_bad
                state.candidate_only += cand_bad and not twin_bad
                state.twin_only += twin_bad and not cand_bad
                if state.eproc is not None:
                    state.eproc.update(cand_bad, twin_bad)
                    if state.fired_at is None and state.eproc.rejected and state.margin(self.t) \
                            and state.material(self.t.margin_of(name)):
                        state.fired_at = s.judged
                        if self.first_fired_at is None:
                            self.first_fired_at = self.pairs
            s.sim_delta.add(m.similarity - m.twin_similarity)
            if m.length_ratio is not None and m.twin_length_ratio is not None and m.length_ratio > 0 \
                    and m.twin_length_ratio > 0:
                s.len_delta.add(math.log(m.length_ratio) - math.log(m.twin_length_ratio))

    @property
    def fired(self) -> bool:
        """Whether any critical measure of any slice has fired (the stage stops)."""
        return self.first_fired_at is not None

    def results(self, critical_only: bool = False) -> list[SliceResult]:
        """Every slice's metrics and score, now; `critical_only`: the critical measures alone (what
        the pair rules read; no fixed-horizon test is run, so it is cheap enough to ask after every
        chunk — the score then counts those alone)."""
        return [self._result(s, critical_only) for s in self.slices.values()]

    def _binary(self, name: str, st: MeasureState) -> MetricResult:
        cand_rate = st.candidate_bad / st.eligible if st.eligible else None
        twin_rate = st.twin_bad / st.eligible if st.eligible else None
        excess = None if not st.eligible else (st.candidate_bad - st.twin_bad) / st.eligible
        if st.eproc is not None:
            upper, margin = st.upper(), self.t.margin_of(name)
            label = "Fired" if st.fired_at is not None else "Nodata" if not st.eligible else "Pass"
            if label == "Pass" and st.eproc.rejected and st.margin(self.t):  # beyond the noise, estimated below materiality
                label = "Immaterial" if upper is not None and upper <= margin else "Below materiality"
            counts = (st.candidate_only, st.twin_only, st.eligible - st.candidate_only - st.twin_only)
            return MetricResult(name=name, critical=True, label=label, candidate_rate=cand_rate, twin_rate=twin_rate, eligible=st.eligible,
                                p_value=st.eproc.p_value, e_value=st.eproc.e_value, effect=excess, fired_at=st.fired_at, upper=upper,
                                materiality=margin, counts=counts, alpha=st.alpha)
        if not st.eligible:
            return MetricResult(name=name, critical=False, label="Nodata", candidate_rate=None, twin_rate=None, eligible=0, p_value=None,
                                e_value=None, effect=None)
        from scipy.stats import binomtest  # scipy.stats when a gate judges, not when a plan is made (0.4 s of every `run`)

        b, c = st.candidate_only, st.twin_only  # non-critical: McNemar's exact test, fixed horizon
        p = binomtest(b, b + c, 0.5, alternative="greater").pvalue if b + c else 1.0
        high = p < 1 - self.t.confidence and st.margin(self.t)
        return MetricResult(name=name, critical=False, label="High" if high else "Pass", candidate_rate=cand_rate, twin_rate=twin_rate,
                            eligible=st.eligible, p_value=float(p), e_value=None, effect=excess)

    def _continuous(self, name: str, deltas: SignedRanks, tolerance: float, direction: str) -> MetricResult:
        if deltas.nonzero < 5:
            return MetricResult(name=name, critical=False, label="Pass" if len(deltas) else "Nodata", candidate_rate=None, twin_rate=None,
                                eligible=len(deltas), p_value=None, e_value=None, effect=0.0 if len(deltas) else None)
        # Wilcoxon's signed-rank test (zero-split), carried from look to look: a look ranks only the new deltas
        p = deltas.pvalue("less" if direction == "decrease" else "two-sided")
        shift = hodges_lehmann(np.array(deltas.values))
        beyond = shift < -tolerance if direction == "decrease" else abs(shift) > tolerance
        label = "Pass"
        if p < 1 - self.t.confidence and beyond:
            label = "Low" if shift < 0 else "High"
        return MetricResult(name=name, critical=False, label=label, candidate_rate=None, twin_rate=None, eligible=len(deltas), p_value=p,
                            e_value=None, effect=shift)

    def _result(self, s: SliceState, critical_only: bool = False) -> SliceResult:
        metrics = [self._binary(n, st) for n, st in s.measures.items() if not critical_only or st.eproc is not None]
        if not critical_only:
            metrics.append(self._continuous("similarity", s.sim_delta, self.t.similarity_tolerance, "decrease"))
            metrics.append(self._continuous("length", s.len_delta, math.log1p(self.t.length_tolerance), "either"))
        counted = [m for m in metrics if m.label != "Nodata"]
        if any(m.label == "Fired" for m in metrics):
            score = 0.0
        else:
            passed = sum(m.label in ("Pass", "Immaterial", "Below materiality") for m in counted)
            score = round(100.0 * passed / len(counted), 2) if counted else 100.0
        return SliceResult(str(s.key), s.pairs, s.judged, dict(s.unjudged), tuple(metrics), score)
