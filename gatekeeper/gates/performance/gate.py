"""The performance gate — after the five, and only where correctness passed.

The checks, why, and what a failure looks like are `PerformanceGate`'s docstring; the load
generator is `gatekeeper/perf/loadgen.py`, the figures' definitions `perf/figures.py`, the
statistics `perf/compare.py`, the measurement design `measure.py`, capacity and cost
`capacity.py`, the baseline `baseline.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace


from gatekeeper.config.run_config import find_file
from gatekeeper.detection import DetectionLimit
from gatekeeper.evidence import Interval, Intervals, Series, Table
from gatekeeper.gates.interface import Gate, GateContext
from gatekeeper.gates.performance.baseline import choose
from gatekeeper.gates.performance.device import engine_device
from gatekeeper.gates.performance.launches import load_targets, sides
from gatekeeper.gates.performance.reference_load import measured_load
from gatekeeper.gates.performance.rounds import measure_rounds
from gatekeeper.gates.performance.errors_check import judge_errors
from gatekeeper.gates.performance.capacity import cost_per_1000, describe_points, knee, sweep, sweep_curve
from gatekeeper.gates.performance.history_check import entry_of, history_check
from gatekeeper.perf.measure import SIDES, LevelBlocks, measure_level, warm_up
from gatekeeper.gates.performance.measurement_check import measurement_check
from gatekeeper.gates.performance import primary
from gatekeeper.gates.performance.settings import PRIMARY_LEVEL, PRIMARY_METRICS, PerformanceSettings
from gatekeeper.gates.performance.spread import calibrated_spreads
from gatekeeper.perf.calibration import machine_load
from gatekeeper.perf.history import history_path
from gatekeeper.perf.workload_choice import configured_workload, controlled_workload
from gatekeeper.traffic.settings import ShadowSettings
from gatekeeper.stats.holm import holm
from gatekeeper.perf.compare import Budget, Comparison, compare
from gatekeeper.perf.loadgen import LoadTarget
from gatekeeper.perf.workload import Workload
from gatekeeper.results import CheckResult, Judgement, Status, Verdict
from gatekeeper.reference_load import ReferenceLoad
from gatekeeper.run_plan import RunPlan
from gatekeeper.traffic.format import load_traffic
from gatekeeper.verdict import decide
from gatekeeper.stats.quantiles import percentile
from gatekeeper.gates.performance import checks
from gatekeeper.gates.performance.checks import CapacityFinding, ComparisonFinding, ErrorsFinding, SloLimits

CDF_POINTS = (1, 5, 10, 25, 50, 75, 90, 95, 99)


class PerformanceGate(Gate):
    """Performance — is the candidate as fast as its baseline, where its answers are right?

    Runs after the five correctness gates and only when they passed (speed of a wrong answer is
    not a result: otherwise every check is skipped with that reason). The candidate is measured
    against the policy's baseline — for the bundled pair the candidate's own launch without its
    faults (the trusted fp32 reference is not a performance baseline), for real engines the
    reference target. A load generator streams seeded synthetic requests (controlled input and
    output lengths) to one target at a time, in counterbalanced block pairs (A B, B A, …), at each
    judged concurrency; the baseline's blocks against each other are the noise floor. Where the gate
    launches both sides itself it measures in launch rounds (`primary.py`): each round a fresh
    launch per side, until the primary decode figure's sequential test decides at the policy's
    materiality; the other levels get a share of their pairs in every round. The spread between
    two launches of one build (`launch_spread`, τ) is in every standard error: a slower process is
    not a slower build. τ is this machine's where `gatekeeper perf calibrate` measured it (A/A
    launch pairs in the performance history), else the policy's `launch_spread`, assumed — the
    run's notes say which; targets the gate does not launch get a note of the smallest regression
    one process per side can decide.

    Checks: `performance.measurement` (the measurement is valid: the client kept its schedule, the
    baseline answered, the noise floor is stable); `performance.primary` (launched pairs: decode
    seconds per output token at concurrency 1, FAIL at a regression of the materiality, PASS at
    none, each with its stated error rate; undecided after the most rounds, or when this run's
    rounds show the machine noisier than its calibration); the guardrails
    `performance.c<N>.<metric>` per concurrency N
    for output tokens/s and TPOT p50 (the guardrail family, blocking), the server's CPU seconds per
    output token where both sides run on this machine (blocking once this machine's τ for it is
    calibrated — its budget, 5% at concurrency 1 and 15% above, needs that; until then the
    advisory "uncalibrated" family: CPU time is what contention on a shared runner inflates least,
    and is blind to waiting and to GPU time, `perf/cpu.py`; for an engine on an accelerator,
    declared or observed, the advisory "host-overhead" family: `device.py`) and TTFT p95 (the tail family,
    advisory until tail spreads between launches are calibrated) — FAIL when the candidate is worse
    than its budget and the noise floor, and significantly so (one-sided t test on the pairs' log
    ratios with τ in the standard error, Holm within the family at `alpha`); PASS when the
    interval rules out a regression beyond the budget (even if significantly worse within it);
    otherwise undecided (WARN, not judged: a blocking one holds the run — more pairs or a quieter
    machine would tell);
    `performance.errors_under_load` (failures counted on both sides, one-sided Fisher exact test:
    `errors_check.py`); `performance.capacity` (advisory: the knee
    of a concurrency sweep under the SLOs, goodput and cost per 1,000 requests);
    `performance.history` (advisory: the run appended to the policy's history file, and change
    points across runs that made a figure worse).

    A failure looks like: a dependency bump that costs 23% decode throughput (docs/bug-classes.md#decode-regression), or a 5%
    per-step slowdown that only a paired, interleaved measurement separates from a noisy machine.
    """

    id = checks.GATE
    stage = 6
    title = "Performance"
    Settings = PerformanceSettings
    judgement = Judgement.STATISTICAL
    min_judged_share = 0.5
    reference_cacheable = False  # it measures load: every request is sent
    measures_machine = True  # a rejudge cannot replay load; it carries the measured result over

    @classmethod
    def not_applicable(cls, settings: PerformanceSettings, plan: RunPlan) -> str | None:
        """No baseline for this pair (a real engine against the bundled reference, `baseline: auto`)."""
        choice = choose(settings.baseline, plan.candidate, plan.reference)
        return choice.why if choice.kind == "none" else None

    @classmethod
    def validate(cls, settings: PerformanceSettings, plan: RunPlan) -> None:
        """At plan time: the baseline can be had for this pair, and a traffic source loads."""
        choose(settings.baseline, plan.candidate, plan.reference)
        if settings.source == "traffic":
            load_traffic(find_file(settings.traffic or ShadowSettings().traffic), skip_bad=True)

    @classmethod
    def reference_load(cls, settings: PerformanceSettings, plan: RunPlan) -> ReferenceLoad | None:
        """Measuring the reference as the baseline: `reference_load.py`."""
        return measured_load(settings, plan)

    @classmethod
    def next_step(cls, check: CheckResult, settings: PerformanceSettings) -> str | None:
        """An undecided figure: the primary is decided in launch rounds (more of them), a guardrail
        in one measurement per level (more requests per level); either, on a quieter machine."""
        if not check.undecided:
            return None
        more = (f"raise gates.performance.rounds (now {settings.rounds[0]}–{settings.rounds[1]} launch rounds)"
                if check.id == checks.PRIMARY else
                f"raise gates.performance.level_requests (now {settings.level_requests} requests per side at each level)")
        return f"more measurement decides it: {more} or measure on a quieter machine (nothing else running)"

    def run(self, ctx: GateContext[PerformanceSettings]) -> None:
        """Skip unless correctness passed; else measure, compare, sweep."""
        s = ctx.settings
        correctness = [g for g in ctx.earlier if g.stage < self.stage and g.excluded is None]
        if correctness:
            verdict, _ = decide(correctness)
            if verdict is not Verdict.PROMOTE:
                ctx.skip(checks.NOT_RUN, f"not measured: correctness did not pass (verdict {verdict.value}); the speed of "
                         "wrong answers is not a result", advisory=True)
                return
        else:
            ctx.notes.append("performance: no correctness gate ran in this run; the figures assume correct answers")
        choice = choose(s.baseline, ctx.run.specs["candidate"], ctx.run.specs["reference"])
        assert choice.kind != "none", "not_applicable() keeps this gate from running without a baseline"
        ctx.progress(f"performance: baseline is {choice.why}")
        launched = choice.kind == "launch" and ctx.run.launch is not None
        # the machine's load before this gate launches anything: which calibrations apply
        taus, tau_note = calibrated_spreads(history_path(s.history, ctx.run.out_dir), s, machine_load())
        base_ep, cand_ep = sides(ctx, choice, 1)
        targets = load_targets(ctx, choice, base_ep, cand_ep)
        workload = controlled_workload(configured_workload(s.source, s.traffic, s.workload(), base_ep), targets, ctx.run.seed, ctx.notes)
        levels = [LevelBlocks(level) for level in s.levels]
        rounds = None
        if launched:
            rounds = measure_rounds(ctx, s, choice, targets, workload, levels, taus, tau_note)
            counts, judged_levels, targets = rounds.launches, rounds.levels, rounds.targets
        else:
            ctx.notes.append(f"performance: one launch per side (the gate does not launch the {choice.kind}); {tau_note}; "
                             + primary.one_process_limit(s, s.launch_spread))
            warm = warm_up(targets, workload.requests(s.warmup_requests, ctx.run.seed + 1))
            if warm.settle:
                ctx.notes.append(f"performance: {warm.why()}")
            for blocks in levels:
                blocks.extend(measure_level(targets, blocks.level, s.pairs_at(blocks.level),
                                            s.requests_per_block(blocks.level), workload, ctx.run.seed, s.slo(),
                                            ctx.progress, settle=warm.settle))
            counts, judged_levels = {lv.level: 1 for lv in levels}, levels
        valid, why = measurement_check(ctx, judged_levels, choice.why, workload)
        if rounds is not None:
            primary.write(ctx, s, rounds.figure, rounds.state, rounds.made, rounds.blocks,
                          "calibrated" if rounds.tau_calibrated else "assumed", None if valid else why)
        device = engine_device(s.engine_device, targets)
        if device is not None:
            ctx.notes.append("performance: CPU seconds per output token "
                             + ("can block (a CPU engine" if device.on_cpu else "advisory (an accelerator engine: its CPU "
                                "time is host overhead") + f"; {device.why})")
        # the primary's own figure at its level is decided by the rounds at the materiality, not again at a budget
        decided = frozenset({f"c{PRIMARY_LEVEL}.{rounds.figure.metric}"} if rounds is not None else ())
        judged = judge(levels, s, counts, taus, decided, host_only=device is not None and not device.on_cpu)
        for lv in levels:
            for c, p_adj in (j for j in judged if j[0].level == f"c{lv.level}"):
                self._comparison(ctx, s, c, p_adj, valid, why, lv)
        self._errors(ctx, s, judged_levels)
        self._capacity(ctx, s, targets, workload)
        if valid:
            history_check(ctx, history_path(s.history, ctx.run.out_dir),
                          entry_of(ctx.run.run_id, ctx.run.specs["candidate"].describe(), choice.why, [c for c, _ in judged],
                                   primary.history_figures(rounds.figure, rounds.state, rounds.blocks) if rounds is not None else None),
                          {**{m: False for m in PRIMARY_METRICS}, **{b.metric: b.higher_is_better for b in s.budgets()}})
        ctx.notes.append(f"performance: baseline {choice.why}; {sum(len(lv.figures['candidate']) for lv in judged_levels)} "
                         f"blocks per side over concurrencies {', '.join(str(lv.level) for lv in judged_levels)}")

    def _comparison(self, ctx: GateContext[PerformanceSettings], s: PerformanceSettings, c: Comparison, p_adj: float | None, valid: bool,
                    why: str, lv: LevelBlocks) -> None:
        name = checks.comparison(lv.level, c.metric)
        evidence = [_quantile_series(lv, c.metric)] if c.metric.startswith(("ttft", "tpot", "e2e")) else []
        if not valid:
            ctx.check(name, Status.SKIP, f"not judged: {why}", ComparisonFinding(level=lv.level, metric=c.metric))
            return
        metrics = ComparisonFinding(
            level=lv.level, metric=c.metric, pairs=c.pairs, baseline=c.baseline, candidate=c.candidate, ratio=c.ratio,
            ci=c.ci, confidence=s.confidence, noise_ratio=c.noise_ratio, noise_ci=c.noise_ci, budget=c.limit,
            threshold=c.threshold, p_worse=c.p_worse, p_worse_holm=p_adj, worse_by=c.worse_by,
            baseline_blocks=tuple(lv.series("baseline", c.metric)), candidate_blocks=tuple(lv.series("candidate", c.metric)),
        )
        if c.unjudged is not None:
            ctx.check(name, Status.SKIP, f"not judged: {c.unjudged}", metrics)
            return
        assert c.ratio is not None and c.ci is not None and c.worse_by is not None
        shown = (f"candidate/baseline {c.ratio:.3f} [{c.ci[0]:.3f}, {c.ci[1]:.3f}] at {s.confidence:.0%} "
                 f"(τ {c.spread:.1%})" + (f"; noise floor {c.noise_ratio:.3f}" + (
                     " (the baseline drifted against itself: the threshold widens to it)"
                     if c.noise_unstable(s.alpha) else "") if c.noise_ratio is not None else ""))
        advisory = c.family != "guardrail"
        family = "" if not advisory else f" [{c.family} family, advisory" + (
            ": `gatekeeper perf calibrate` measures this machine's τ and makes it blocking]"
            if c.family == "uncalibrated" else ": the engine runs on an accelerator, its CPU time is host overhead]"
            if c.family == "host-overhead" else "]")
        significant = p_adj is not None and p_adj < s.alpha
        undecided = False
        if regressed(c, p_adj, s.alpha):
            status, reason = Status.FAIL, (f"{c.worse_by:.1%} worse at concurrency {lv.level} (budget {c.limit:.0%}, "
                                           f"threshold {c.threshold:.1%}; p={p_adj:.2g} after Holm): {shown}")
        elif c.excluded():
            how = (f"worse by {c.worse_by:.1%}, significantly, but within it" if significant and c.worse_by > 0 else
                   f"{'better' if c.worse_by < 0 else 'worse'} by {abs(c.worse_by):.1%}")
            status, reason = Status.PASS, f"no regression beyond {c.threshold:.1%} at concurrency {lv.level} ({how}): {shown}"
        else:  # the interval still allows a regression beyond the threshold: undecided
            assert c.worse_bound is not None
            status, undecided = Status.WARN, True
            reason = (f"undecided at concurrency {lv.level}: {'better' if c.worse_by < 0 else 'worse'} by "
                      f"{abs(c.worse_by):.1%}{', significantly' if significant else ''}, but the interval allows up to "
                      f"{c.worse_bound:.1%} worse (threshold {c.threshold:.1%}); more pairs, more launches or a quieter "
                      f"machine would tell: {shown}")
        limit = 1 - c.threshold if c.higher_is_better else 1 + c.threshold
        ratio = Intervals(f"{c.metric} at concurrency {lv.level}: candidate / baseline", (Interval(
            f"{c.metric} at concurrency {lv.level} ({'≥' if c.higher_is_better else '≤'} {limit:.3f})", c.ratio, c.ci[0],
            c.ci[1], limit),), 1.0, "candidate / baseline", is_key=True)
        bound = None if c.worse_bound is None else DetectionLimit(  # what the PASS rules out: its interval's worst end
            max(c.worse_bound, 0.0), f"{c.metric} at concurrency {lv.level}", "bound", 1 - (1 - s.confidence) / 2)
        ctx.check(name, status, reason + family, metrics, [ratio, *evidence], advisory=advisory, undecided=undecided,
                  limit=bound)

    def _errors(self, ctx: GateContext[PerformanceSettings], s: PerformanceSettings, levels: list[LevelBlocks]) -> None:
        """`performance.errors_under_load`: the candidate's failed requests under load against the baseline's."""
        failed = {side: [r.error for lv in levels for res in lv.results[side] for r in res.measured if r.error]
                  for side in SIDES}
        total = {side: sum(len(res.measured) for lv in levels for res in lv.results[side]) for side in SIDES}
        j = judge_errors(len(failed["candidate"]), total["candidate"], len(failed["baseline"]), total["baseline"], s.alpha)
        finding = ErrorsFinding(candidate_failed=len(failed["candidate"]), baseline_failed=len(failed["baseline"]),
                                candidate_requests=total["candidate"], baseline_requests=total["baseline"], p=j.p,
                                examples=tuple(failed["candidate"][:5]))
        ctx.check(checks.ERRORS, j.status, j.reason + (f": {failed['candidate'][0]}" if failed["candidate"] else ""),
                  finding, undecided=j.undecided, judgement=Judgement.STATISTICAL, limit=j.limit)

    def _capacity(self, ctx: GateContext[PerformanceSettings], s: PerformanceSettings, targets: dict[str, LoadTarget],
                  workload: Workload) -> None:
        """`performance.capacity` (advisory): each side's sweep, knee, goodput and cost."""
        slo = s.slo()
        points = sweep(targets, s.sweep, workload, ctx.run.seed, slo, ctx.progress)
        knees = {side: knee(points[side], slo) for side in SIDES}
        costs = {side: cost_per_1000(knees[side], s.price_per_accelerator_hour, s.accelerators) for side in SIDES}
        title = f"vs concurrency (knee: baseline {_lvl(knees['baseline'])}, candidate {_lvl(knees['candidate'])})"
        curves = [sweep_curve(f"output tokens/s {title}", points, "output_tokens_per_s", "tokens/s"),
                  sweep_curve(f"TTFT p95 {title}", points, "ttft_p95_s", "ms", 1000.0, slo.ttft_s),
                  sweep_curve(f"goodput {title}", points, "goodput_rps", "requests/s")]
        at_knee = {side: knees[side].figures if knees[side] is not None else {} for side in SIDES}  # type: ignore[union-attr]
        rows = [(side, _lvl(knees[side]), _fmt(at_knee[side].get("requests_per_s")), _fmt(at_knee[side].get("goodput_rps")),
                 _fmt(costs[side]), _fmt(max((p.engine.get("kv_cache_usage_perc_max", 0.0) for p in points[side]),
                                             default=None)),
                 _fmt(sum(p.engine.get("num_preemptions", 0.0) for p in points[side])),
                 _fmt(max((p.engine.get("num_requests_waiting_max", 0.0) for p in points[side]), default=None)))
                for side in SIDES]
        table = Table(f"capacity under the SLOs ({SINGLE})", ("side", "knee (concurrency)", "requests/s at knee", "goodput at knee",
                                                  "cost per 1,000 requests", "KV cache peak", "preemptions",
                                                  "queue peak"), rows)
        metrics = CapacityFinding(
            slo=SloLimits(ttft_p95_s=slo.ttft_s, tpot_p95_s=slo.tpot_s), knee={k: _lvl(v) for k, v in knees.items()},
            cost_per_1000=costs, price_per_accelerator_hour=s.price_per_accelerator_hour, accelerators=s.accelerators,
            sweep={side: describe_points(points[side]) for side in SIDES}, single_measurement=True,
        )
        kb, kc = knees["baseline"], knees["candidate"]
        if kb is None:
            ctx.check(checks.CAPACITY, Status.SKIP, "not judged: the baseline misses the SLOs already at the lowest swept concurrency",
                      metrics, [table, *curves], advisory=True)
        elif kc is None or kc.level < kb.level:
            ctx.check(checks.CAPACITY, Status.WARN, f"the candidate's knee is concurrency {_lvl(kc)}, the baseline's {kb.level} "
                      f"(the highest concurrency up to which every level meets the SLOs; {SINGLE})", metrics,
                      [table, *curves], advisory=True, judgement=Judgement.TOLERANCE)
        else:
            ctx.check(checks.CAPACITY, Status.PASS, f"knee at concurrency {kc.level} (baseline {kb.level}); cost per 1,000 "
                      f"requests {_fmt(costs['candidate'])} (baseline {_fmt(costs['baseline'])}); {SINGLE}", metrics,
                      [table, *curves], advisory=True, judgement=Judgement.TOLERANCE)


SINGLE = "one block per side per concurrency: single measurements, no interval"


def judge(levels: list[LevelBlocks], s: PerformanceSettings, launches: int | Mapping[int, int] = 1,
          spreads: Mapping[str, float] | None = None, exclude: frozenset[str] = frozenset(), host_only: bool = False
          ) -> list[tuple[Comparison, float | None]]:
    """Every budgeted metric at every level compared, with its p-value adjusted by Holm within
    its family (None for a comparison not judged). τ in the standard errors: `spreads["c<N>.<metric>"]`
    (calibrated: `gatekeeper perf calibrate`) or the policy's `launch_spread`, for `launches`
    launches per side (one count for every level, or per level). A metric no block measured (CPU
    time where a side is not launched here) is not compared at all, nor one in `exclude`
    (the primary figure at its level where launch rounds decide it). `host_only`: the engine runs
    on an accelerator, so CPU time is judged in the advisory "host-overhead" family
    (`device.py`). A comparison FAILs when its p is below `alpha` and it is material
    (`Comparison.material`)."""
    taus = spreads or {}
    per_level = launches if isinstance(launches, Mapping) else {lv.level: launches for lv in levels}
    comparisons = [compare(_family(b, f"c{lv.level}.{b.metric}" in taus, host_only), f"c{lv.level}", lv.series("baseline", b.metric),
                           lv.series("candidate", b.metric), s.confidence, taus.get(f"c{lv.level}.{b.metric}", s.launch_spread),
                           per_level[lv.level])
                   for lv in levels for b in s.budgets(lv.level)
                   if lv.measured(b.metric) and f"c{lv.level}.{b.metric}" not in exclude]
    adjusted: dict[int, float] = {}
    for family in {c.family for c in comparisons}:
        judged = [c for c in comparisons if c.unjudged is None and c.family == family]
        adjusted |= dict(zip((id(c) for c in judged), holm([c.p_worse if c.p_worse is not None else 1.0 for c in judged])))
    return [(c, adjusted.get(id(c))) for c in comparisons]


def _family(b: Budget, calibrated: bool, host_only: bool = False) -> Budget:
    """A budget of CPU time is advisory ("host-overhead") for an accelerator engine; one that
    needs this machine's τ is advisory ("uncalibrated") without it."""
    if b.cpu_time and host_only:
        return replace(b, family="host-overhead")
    return replace(b, family="uncalibrated") if b.needs_calibration and not calibrated else b


def regressed(c: Comparison, p_adj: float | None, alpha: float) -> bool:
    """The FAIL rule: significant after Holm and material."""
    return p_adj is not None and p_adj < alpha and c.material()


def _quantile_series(lv: LevelBlocks, metric: str) -> Series:
    """The latency distribution per side over all blocks (percentiles: an inverted CDF)."""
    base = metric.rsplit("_p", 1)[0]
    attr = {"ttft": "ttft_s", "tpot": "tpot_s", "e2e": "e2e_s"}.get(base, "e2e_s")
    ys = {}
    for side in SIDES:
        values = [getattr(r, attr) for res in lv.results[side] for r in res.measured if r.ok and getattr(r, attr) is not None]
        ys[side] = tuple(percentile(values, q) or 0.0 for q in CDF_POINTS) if values else tuple(0.0 for _ in CDF_POINTS)
    return Series(f"{base.upper()} distribution at concurrency {lv.level} (percentiles)", CDF_POINTS, ys, "percentile",
                  "seconds")


def _lvl(point) -> str:
    return "none" if point is None else str(point.level)


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.4g}"
