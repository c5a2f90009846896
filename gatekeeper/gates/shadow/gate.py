"""Gate 5 — shadow traffic and canary, on recorded traffic (replay).

The checks, why, and what a failure looks like are `ShadowGate`'s docstring (the report shows
it); replay is `replay.py`, the pair measures `measures.py`, the statistics `analysis.py` and
`sequential.py`, the rollback rules `rules.py`, the settings `settings.py`.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from concurrent.futures import ThreadPoolExecutor

from gatekeeper.endpoints.client import Endpoint
from gatekeeper.errors import ConfigError, EndpointError
from gatekeeper.evidence import Evidence, Series, Table
from gatekeeper.gates.interface import Gate, GateContext
from gatekeeper.traffic.analysis import Analysis, SliceKey
from gatekeeper.traffic.answers import Answer
from gatekeeper.traffic.judging import RequestFacts, slice_plan
from gatekeeper.traffic.measures import Measures, Pair, disagrees, measure
from gatekeeper.gates.shadow.reference_load import replay_load
from gatekeeper.gates.shadow.replay import offsets_of, send_all, stage_selection
from gatekeeper.gates.shadow.review import ROW_COLUMNS, Review, review, reviewable
from gatekeeper.gates.shadow.earlier_rules import EARLIER_RULES, earlier_rule
from gatekeeper.traffic import stage_rule
from gatekeeper.traffic.stage_rule import Standing
from gatekeeper.traffic.rules import ANSWERS_DIFFER, PAIR_RULES, TASK_SUCCESS_DOWN, RuleOutcome, localise, pair_rule, undecided
from gatekeeper.stats.quantiles import percentile
from gatekeeper.traffic.task import CHECKS
from gatekeeper.traffic.settings import ShadowSettings, Stage
from gatekeeper.traffic.pair_of import pair_of, wants_json
from gatekeeper.traffic.store import is_postgres, open_store, shown
from gatekeeper.gates.shadow.near_miss import near_misses, reason as near_miss_reason
from gatekeeper.results import CheckResult, Judgement, Status
from gatekeeper.config.run_config import find_file
from gatekeeper.run_plan import RunPlan
from gatekeeper.traffic.format import TrafficFile, TrafficRecord, load_traffic
from gatekeeper.gates.shadow import checks
from gatekeeper.gates.shadow.checks import (Latency, NearMissFinding, NearMissMeasure, RuleFinding, SliceFinding, StageFinding,
                                            TrafficFinding)
from gatekeeper.gates.shadow.evidence import keep_worst, pair_evidence, slice_table

MAX_DIVERGENCES = 30  # confident divergences listed in answers_differ's evidence


class ShadowGate(Gate):
    """Gate 5 — shadow traffic and canary: does the candidate answer real traffic as the reference does?

    Recorded requests (a traffic file, docs/traffic-format.md) are replayed in the policy's
    canary stages — a low-risk tenant first, then wider shares of the traffic. Each request goes
    to the candidate, to the reference, and to the reference again in another order (its twin:
    the noise floor; a second launch of the reference where gatekeeper starts it). Per pair:
    exact agreement, similarity and first divergence, degeneration, JSON and tool-call
    parse/schema validity, task success where the request has a checkable outcome (`task.py`:
    JSON or a tool call that must be valid, no refusal where the reference answered, the expected
    answer where the traffic gives one), finish reason, length ratio, refusal, NaN/Inf logprobs,
    errors, latency. A greedy answer that differs from the reference's is asked of both again with
    logprobs (`review.py`): the same tokens rendered differently (two tool parsers reading one
    malformed call), or a divergence at a near tie within the declared dtype's `near_tie_gap`, is
    no disagreement; a confident divergence is shown with both sides' top tokens and logprobs.

    Per slice (all traffic, each tenant, request kind, model alias, greedy/sampled), the
    candidate's failure rate on each measure is compared with the twin's — the same requests,
    paired — by an anytime-valid sequential test (a mixture SPRT on the discordant pairs, checked
    after every pair; alpha is the gate's family-wise false-ROLLBACK rate) together with Diffy's
    rule (an excess beyond the twin by an absolute and a relative margin). A stage stops as soon
    as a measure fires; a failed stage stops the widening. Non-critical figures (finish reasons,
    refusals, similarity, length) are judged at Kayenta's fixed 98% confidence (McNemar's exact
    test; Wilcoxon signed-rank with the Hodges-Lehmann shift) into a Kayenta-style score.

    Checks: `shadow.traffic` (what was loaded, bad lines skipped); `shadow.stage.<name>` per stage (FAIL
    when a measure fired or the score is below `score_marginal`, WARN when marginal);
    `shadow.rule.<name>` — the rollback conditions (docs/bug-classes.md#rollback-conditions;
    `gatekeeper/traffic/rules.py`): `task_success_down`, `answers_differ`, `structured_parse_drop`,
    `garbage_rate_up`, `errors_up`, `retries_up` on the pairs, and three read from the earlier gates.

    A failure looks like: an engine that garbles one answer in thirty under batching, or breaks
    only the one tenant whose requests carry many tools, while every offline gate passes.
    """

    id = checks.GATE
    stage = 5
    title = "Shadow traffic and canary"
    Settings = ShadowSettings
    judgement = Judgement.STATISTICAL
    min_judged_share = 0.8

    reference_load = classmethod(replay_load)  # what the replay sends a URL reference: `reference_load.py`

    @classmethod
    def needs_targets(cls, settings: ShadowSettings) -> bool:
        """Judging a pair store sends nothing: the targets need not be up."""
        return not settings.store

    @classmethod
    def validate(cls, settings: ShadowSettings, plan: RunPlan) -> None:
        """At plan time: the traffic file loads (bad lines abort here, with file:line) and
        every stage selects at least one request."""
        if settings.store:
            _stored(settings)  # the store opens and holds pairs; its stages may match none (a SKIP, not an error)
            return
        traffic = _load(settings)
        done: set[str] = set()
        for stage in settings.stage_plan():
            chosen = stage_selection(traffic.records, stage, plan.seed, done)
            if not chosen:
                raise ConfigError(f"stage {stage.name!r} selects no request from {traffic.path} ({stage.describe()})",
                                  plan.policy.path, key="gates.shadow.stages")
            done.update(r.id for r in chosen)

    @classmethod
    def next_step(cls, check: CheckResult, settings: ShadowSettings) -> str | None:
        """An undecided rule: more pairs decide it (the extension, or a larger recording)."""
        if not check.undecided:
            return None
        return (f"more pairs decide it: raise gates.shadow.extension (now {settings.extension} requests replayed while a rule "
                "is undecided) or replay a larger recording of your own traffic (gates.shadow.traffic)")

    def run(self, ctx: GateContext) -> None:
        """Replay stage by stage, judge as the pairs arrive, then the rules."""
        s: ShadowSettings = ctx.settings
        self.reviewed: Counter[str] = Counter()  # why differing answers were no disagreement, counted
        self.twin_forgiven: Counter[str] = Counter()  # the same for the twin's differing answers
        self.stands: Counter[str] = Counter()  # why reviewed differences stand as disagreements, counted
        self.divergences: list[tuple[str, ...]] = []  # confident divergences with their logprobs (Review.row)
        self.task_failed: Counter[tuple[str, str]] = Counter()  # (task check, candidate / twin) failures
        stored = _stored(s) if s.store else None
        traffic = stored[0] if stored else _load(s)
        kinds = Counter(r.kind for r in traffic.records)
        ctx.check("traffic", Status.WARN if traffic.skipped else Status.PASS,
                  f"{len(traffic.records)} requests from {traffic.path} ({', '.join(f'{n} {k}' for k, n in kinds.most_common())})"
                  + (f"; {len(traffic.skipped)} bad line(s) skipped" if traffic.skipped else ""),
                  TrafficFinding(requests=len(traffic.records), skipped=len(traffic.skipped),
                                 tenants=dict(Counter(r.tenant for r in traffic.records)), kinds=dict(kinds)),
                  [Table("skipped lines", ("line",), tuple((x,) for x in traffic.skipped[:50]))] if traffic.skipped else [],
                  judgement=Judgement.EXACT, advisory=True)  # what was loaded, no regression asked: nothing to detect
        stages = s.stage_plan()
        selections: list[list[TrafficRecord]] = []
        done: set[str] = set()
        for stage in stages:
            selections.append(stage_selection(traffic.records, stage, ctx.run.seed, done))
            done.update(r.id for r in selections[-1])
        extension = s.extension_stage()  # its requests are in the slice plan: the alpha split never depends on a look
        more = stage_selection(traffic.records, extension, ctx.run.seed, done) if extension is not None else []
        analysis = Analysis(slice_plan((_facts(r) for sel in [*selections, more] for r in sel), s.min_slice_requests),
                            s.thresholds())
        source = _from_store(stored[1]) if stored else _replayed(ctx, s, _replica(ctx, s))
        worst: list[tuple[float, int, Pair, Measures]] = []
        failed: Stage | None = None
        for stage, chosen in zip(stages, selections):
            if failed is not None:
                ctx.skip(checks.stage(stage.name), f"not run: stage {failed.name!r} failed, so the canary does not widen",
                         advisory=True)
                continue
            if not chosen and stored:
                ctx.skip(checks.stage(stage.name), f"no stored pair matches this stage ({stage.describe()})", advisory=True)
                continue
            if self._stage(ctx, s, stage, chosen, analysis, worst, source):
                failed = stage
        if extension is not None and failed is None and more and (open_rules := undecided(analysis.results(critical_only=True))):
            ctx.notes.append(f"shadow: {', '.join(open_rules)} undecided after the stages (a bound wider than its "
                             f"materiality): replaying up to {len(more)} more requests until every rule is decided")
            self._stage(ctx, s, extension, more, analysis, worst, source,
                        until=lambda: not undecided(analysis.results(critical_only=True)))
        slices = analysis.results()
        stopped = analysis.pairs < sum(len(sel) for sel in selections)
        for name in PAIR_RULES:
            self._rule(ctx, pair_rule(name, slices, f"the replay stopped after {analysis.pairs} requests, when a measure "
                                      "fired" if stopped else ""))
        for name in EARLIER_RULES:
            self._rule(ctx, earlier_rule(name, ctx.earlier))
        misses = near_misses(slices)
        if misses and not analysis.fired:
            ctx.check(checks.NEAR_MISS, Status.WARN, near_miss_reason(misses),
                      NearMissFinding(near_misses=tuple(NearMissMeasure.measured(n.metric, slice=n.slice)
                                                        for n in misses)),
                      judgement=Judgement.STATISTICAL, advisory=True, near_miss=True)
        overall = next(sl for sl in slices if sl.key == "all")
        ctx.judged(overall.judged)
        for why, n in overall.unjudged.items():
            ctx.not_judged(why, n)
        if self.reviewed:
            ctx.notes.append("shadow: candidate answers that differ from the reference's but are no disagreement (asked "
                             "again with logprobs): " + ", ".join(f"{n} {why}" for why, n in self.reviewed.most_common()))
        if self.twin_forgiven:
            ctx.notes.append("shadow: the reference's second answers that differ from its first but are no disagreement "
                             "(the same review): " + ", ".join(f"{n} {why}" for why, n in self.twin_forgiven.most_common()))
        if self.stands:
            ctx.notes.append("shadow: differences that stand after the token review: "
                             + ", ".join(f"{n} {why}" for why, n in self.stands.most_common()))
        ctx.notes.append(f"shadow: {analysis.pairs} {'stored pairs judged' if stored else 'requests replayed'}; "
                         "the sequential test "
                         + (f"fired after {analysis.first_fired_at}" if analysis.fired else "did not fire"))

    def _stage(self, ctx: GateContext, s: ShadowSettings, stage: Stage, chosen: Sequence[TrafficRecord],
               analysis: Analysis, worst: list[tuple[float, int, Pair, Measures]], source: AnswerSource,
               until: Callable[[], bool] | None = None) -> bool:
        """Replay one stage in chunks until its budget, a firing or `until()`; record its check. True when it failed."""
        t0 = time.perf_counter()
        start_pairs = analysis.pairs
        start_judged = analysis.slices[SliceKey("all", "")].judged
        curve_x: list[float] = []
        curve: list[float] = []
        latency: dict[str, list[float]] = {"candidate": [], "reference": []}
        conc = stage.concurrency or s.concurrency
        noise_conc = stage.concurrency or s.noise_floor_concurrency
        ctx.progress(f"shadow: stage {stage.name}: {len(chosen)} requests")
        for at in range(0, len(chosen), s.chunk):
            chunk = list(chosen[at:at + s.chunk])
            cand, ref, twin, reviewed, twin_reviewed = source(chunk, conc, noise_conc)
            latency["candidate"] += [a.e2e_s for a in cand if not a.failed]
            latency["reference"] += [a.e2e_s for a in ref if not a.failed]
            for i, (r, c, a, b) in enumerate(zip(chunk, cand, ref, twin)):
                rv, tv = reviewed.get(i), twin_reviewed.get(i)
                pair = replace(pair_of(r, a, c, b), reviewed=rv.forgiven if rv else None,
                               twin_reviewed=tv.forgiven if tv else None)
                if rv is not None:
                    self._count_review(r, rv)
                if tv is not None and tv.forgiven:
                    self.twin_forgiven[tv.forgiven] += 1
                measured = measure(pair)
                for role, failed in zip(("candidate", "twin"), measured.task):
                    self.task_failed.update((check, role) for check in failed)
                analysis.add(pair, measured)
                keep_worst(worst, pair, measured)
                ep = analysis.slices[SliceKey("all", "")].measures["disagreement"].eproc
                curve_x.append(analysis.pairs)
                curve.append(math.log10(max(ep.e_value, 1e-12)) if ep is not None else 0.0)
            ctx.progress(f"shadow: stage {stage.name}: {min(at + s.chunk, len(chosen))}/{len(chosen)}")
            if (analysis.fired and s.stop_early) or (until is not None and until()):
                break
        slices = analysis.results()
        fired = [(sl.key, m) for sl in slices for m in sl.fired]
        overall = next(sl for sl in slices if sl.key == "all")
        replayed = analysis.pairs - start_pairs
        found = StageFinding(requests=replayed, planned=len(chosen), stopped_early=replayed < len(chosen),
                             score=overall.score, fired=tuple(f"{k}:{m.name}" for k, m in fired), concurrency=conc,
                             latency_s={role: _percentiles(v) for role, v in latency.items()},
                             slices=tuple(SliceFinding.analysed(sl) for sl in slices))
        all_disagreement = analysis.slices[SliceKey("all", "")].measures["disagreement"]
        threshold = -math.log10(all_disagreement.alpha or 1.0)
        evidence = [slice_table(slices),
                    Series(f"stage {stage.name}: sequential evidence (all traffic, disagreement)", tuple(curve_x),
                           {"log10 e-value": tuple(curve), "rejection threshold log10(1/alpha)": tuple(threshold for _ in curve_x)},
                           "requests replayed", "log10 e-value", is_key=True),
                    *(pair_evidence(wp, wm) for _, _, wp, wm in sorted(worst, key=lambda w: -w[0]))]
        judged = overall.judged - start_judged
        standing = stage_rule.standing(bool(fired), judged, overall.score, s.score_marginal, s.score_pass)
        if standing is Standing.FIRED:
            key, m = fired[0]
            where = localise(m.name, slices)
            status, reason = Status.FAIL, (f"{m.name} fired in {key} after {replayed} of {len(chosen)} requests "
                                           f"(candidate {m.candidate_rate:.1%} vs twin {m.twin_rate:.1%})"
                                           + (f", {where}" if where else "") + "; the canary stops here")
        elif standing is Standing.NOT_JUDGED:  # every pair unjudged (the reference failed): nothing was compared, so no PASS
            status, reason = Status.SKIP, (f"not judged: none of the {replayed} pairs could be compared "
                                           f"({', '.join(overall.unjudged) or 'no answers'})")
        elif standing is Standing.BELOW_MARGINAL:
            status, reason = Status.FAIL, f"score {overall.score:g} below score_marginal {s.score_marginal:g}"
        elif standing is Standing.MARGINAL:
            status, reason = Status.WARN, f"marginal: score {overall.score:g} below score_pass {s.score_pass:g}"
        else:
            status, reason = Status.PASS, (f"{replayed} requests ({stage.describe()}): no measure beyond the noise floor; "
                                           f"score {overall.score:g}")
        ctx.check(checks.stage(stage.name), status, reason, found, evidence, started=t0)
        return status is Status.FAIL

    def _count_review(self, record: TrafficRecord, rv: Review) -> None:
        """Count one reviewed difference; keep a confident divergence's logprobs for the evidence."""
        if rv.forgiven:
            self.reviewed[rv.forgiven] += 1
            return
        self.stands[rv.stands] += 1
        if rv.divergence is not None and len(self.divergences) < MAX_DIVERGENCES:
            self.divergences.append(rv.row(record))

    def _rule(self, ctx: GateContext, outcome: RuleOutcome) -> None:
        evidence: list[Evidence] = []
        if outcome.evidence_rows:
            columns = (("where", "what", "candidate", "twin", "pairs", "e-value", "fired after") if outcome.name in PAIR_RULES
                       else ("check", "detail"))
            evidence.append(Table(f"rule {outcome.name}", columns, outcome.evidence_rows))
        found = RuleFinding(rule=outcome.name, pairs_to_decide=outcome.to_decide)
        reason = outcome.reason
        if outcome.name == TASK_SUCCESS_DOWN:
            failed = {c: {role: self.task_failed[(c, role)] for role in ("candidate", "twin")} for c in CHECKS}
            found = replace(found, failed_checks=failed)
            evidence.append(Table("task checks failed (every judged pair): candidate / the reference's second run",
                                  ("check", "candidate", "twin"), tuple((c, n["candidate"], n["twin"]) for c, n in failed.items())))
        if outcome.name == ANSWERS_DIFFER:
            found = replace(found, forgiven=dict(self.reviewed), stands=dict(self.stands), twin_forgiven=dict(self.twin_forgiven))
            if self.divergences:
                evidence.append(Table("confident divergences: both sides asked again with logprobs, at the first token "
                                      "where they part", ROW_COLUMNS, tuple(self.divergences)))
            n = self.stands.get("a confident divergence", 0)
            if outcome.status is Status.FAIL and n:
                reason += f"; {n} confident divergence(s), their tokens and logprobs in the evidence"
            if outcome.status is Status.FAIL and not ctx.settings.store and (why := reviewable(ctx)) is not None:
                reason += f"; the near-tie review could not run: {why}"
        ctx.check(checks.rule(outcome.name), outcome.status, reason, found, evidence, advisory=outcome.status is Status.SKIP,
                  limit=outcome.limit, decide=outcome.decide)


Answers = tuple[list[Answer], list[Answer], list[Answer | None], dict[int, Review], dict[int, Review]]
AnswerSource = Callable[[list[TrafficRecord], int, int], Answers]
"""(candidate, reference, twin) answers for a chunk of requests at (concurrency, noise-floor concurrency),
and the token review of the chunk's indices whose candidate answer differs, then of those whose twin
differs (gates/shadow/review.py)."""


def _replayed(ctx: GateContext, s: ShadowSettings, replica: Endpoint | None) -> AnswerSource:
    """Answers by replaying: the candidate and the reference are separate servers, so their first
    passes go at once (the same arrivals to both); the twin goes at the same time to a replica of
    the reference, else after them to the reference itself. A differing greedy answer is reviewed
    at the near-tie gap and drift of the candidate's declared dtype (the policy's `near_tie_gap`, `near_tie_drift`)."""
    dtype = ctx.candidate_dtype()
    gap, drift = s.gap(dtype), s.drift(dtype)

    def answers(chunk: list[TrafficRecord], conc: int, noise_conc: int) -> Answers:
        offsets = offsets_of(chunk, s.time_scale) if s.preserve_timing else None
        with ThreadPoolExecutor(max_workers=3) as pool:
            cand_f = pool.submit(send_all, ctx.candidate, chunk, conc, s.max_tokens_cap, offsets)
            ref_f = pool.submit(send_all, ctx.reference, chunk, conc, s.max_tokens_cap, offsets)
            twin_f = pool.submit(send_all, replica, chunk[::-1], noise_conc, s.max_tokens_cap) if replica else None
            cand, ref = cand_f.result(), ref_f.result()
            twin = (twin_f.result() if twin_f else send_all(ctx.reference, chunk[::-1], noise_conc, s.max_tokens_cap))[::-1]
        def differs(side: Sequence[Answer]) -> list[int]:
            return [i for i, (r, c, a) in enumerate(zip(chunk, side, ref))
                    if not c.failed and not a.failed and disagrees(pair_of(r, a, c, None))]
        return (cand, ref, list(twin), review(ctx, chunk, cand, ref, differs(cand), s.max_tokens_cap, conc, gap, drift),
                review(ctx, chunk, twin, ref, differs(twin), s.max_tokens_cap, noise_conc, gap, drift,
                       other=replica or ctx.reference))
    return answers


def _from_store(answers: dict[str, tuple[Answer, Answer, Answer | None]]) -> AnswerSource:
    """Answers a pair store holds (reference, candidate, twin by request id)."""
    def get(chunk: list[TrafficRecord], conc: int, noise_conc: int) -> Answers:
        rows = [answers[r.id] for r in chunk]
        return [c for _, c, _ in rows], [a for a, _, _ in rows], [t for _, _, t in rows], {}, {}
    return get


def _stored(s: ShadowSettings) -> tuple[TrafficFile, dict[str, tuple[Answer, Answer, Answer | None]]]:
    """A pair store's requests (as a traffic file, in stored order) and answers, read without
    writing to the store (a ConfigError for a file that is no store, a damaged one or a bad row)."""
    with open_store(_store_name(s.store), readonly=True) as store:
        rows = list(store.rows())
    if not rows:
        raise ConfigError(f"pair store {shown(s.store)} holds no pair yet", key="gates.shadow.store")
    records = tuple(r for r, *_ in rows)
    return TrafficFile(shown(s.store), records), {r.id: (ref, cand, twin) for r, ref, cand, twin in rows}


def _store_name(name: str) -> str | Path:
    """A store's file found as other policy files are; a `postgresql://` URL as it is."""
    return name if is_postgres(name) else find_file(name)


def _replica(ctx: GateContext, s: ShadowSettings) -> Endpoint | None:
    """The endpoint the twin pass goes to when it is not the reference itself: a second launch of
    a bundled or launched reference (`twin: replica`); None for `twin: same`, a URL reference
    (gatekeeper cannot start a copy of it) or a replica that did not come up (noted)."""
    spec = ctx.run.specs.get("reference")
    if s.twin != "replica" or ctx.run.launch is None or spec is None or spec.kind == "url":
        return None
    try:
        ep = ctx.run.launch("reference-replica", spec)
    except EndpointError as e:
        ctx.notes.append(f"shadow: the reference replica did not start ({e}); the twin pass goes to the reference")
        return None
    ctx.notes.append("shadow: the twin pass goes to a second launch of the reference, at the same time as the first passes")
    return ep


def _percentiles(values: list[float]) -> Latency:
    """p50 / p95 end-to-end latency (reported here; the performance gate judges latency)."""
    if not values:
        return Latency(p50=None, p95=None)
    return Latency(p50=round(percentile(values, 50) or 0.0, 4), p95=round(percentile(values, 95) or 0.0, 4))


def _load(s: ShadowSettings) -> TrafficFile:
    path = find_file(s.traffic)
    return load_traffic(path, skip_bad=s.bad_lines == "skip")


def _facts(r: TrafficRecord) -> RequestFacts:
    return RequestFacts(r.tenant, r.kind, r.model_alias, r.sampled, wants_json(r), bool(r.request.get("tools")),
                        bool(r.request.get("logprobs")))
