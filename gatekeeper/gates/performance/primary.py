"""`performance.primary`: the pre-registered decode figure, decided at the policy's materiality in
launch rounds (`gatekeeper/perf/sequential.py`).

The figure is fixed before anything is measured and named in the report (`primary_figure.py`):
decode seconds per output token at concurrency 1 (`perf/figures.py`'s `decode_s_per_token`: each
block's decode time over its decode steps), or — where the policy names it (vLLM) — request
seconds per output token (`e2e_s_per_token`). Wall clock, not CPU time: a
regression CPU time cannot see (a lock, a sleep, a GPU kernel) is a regression, and CPU seconds
per token mix prefill and the server's own overhead into decode (the `decode-slowdown` fault's
5% of decode cost 3–4% of them). CPU time per token stays a guardrail beside it.
"""

from __future__ import annotations

import math

from gatekeeper.detection import DetectionLimit
from gatekeeper.evidence import Interval, Intervals, Table
from gatekeeper.gates.interface import GateContext
from gatekeeper.gates.performance import checks
from gatekeeper.gates.performance.checks import PrimaryFinding, PrimaryNoise
from gatekeeper.perf.measure import LevelBlocks
from gatekeeper.gates.performance.primary_figure import Figure
from gatekeeper.gates.performance.settings import PRIMARY_LEVEL, PerformanceSettings
from gatekeeper.perf.compare import log_ratios
from gatekeeper.perf.sequential import Design, Outcome, Round, State
from gatekeeper.results import Status


def design(s: PerformanceSettings, tau: float) -> Design:
    """The sequential test the policy asks for, with this machine's τ (calibrated or assumed)."""
    return Design(s.materiality, s.primary_alpha, 1 - s.primary_power, tau, s.rounds[0], s.rounds[1])


def round_of(figure: Figure, blocks: LevelBlocks, first: int, baseline_first: bool) -> Round | None:
    """The round made of `blocks`' pairs from index `first` on: their log ratios of `figure`
    (pairs the client paced, or without the figure, left out); None when no pair is comparable."""
    d = log_ratios(blocks.series("candidate", figure.metric)[first:], blocks.series("baseline", figure.metric)[first:])
    return Round(tuple(float(x) for x in d), baseline_first) if len(d) else None


def write(ctx: GateContext, s: PerformanceSettings, figure: Figure, state: State | None, rounds: list[Round],
          blocks: LevelBlocks, tau_source: str, invalid: str | None = None) -> None:
    """The check from the test's last state of `figure` (`blocks`: the rounds' blocks, for each
    side's mean; `tau_source`: "calibrated" or "assumed"; `invalid`: why the measurement describes
    no server)."""
    if invalid is not None:
        ctx.check(checks.PRIMARY, Status.SKIP, f"not judged: {invalid}", PrimaryFinding(metric=figure.metric))
        return
    if state is None:
        ctx.check(checks.PRIMARY, Status.WARN, f"undecided: no comparable block pair of {figure.name} in the first "
                  "launch round", PrimaryFinding(metric=figure.metric), undecided=True)
        return
    name = figure.name
    noise = state.noise
    worse = state.ratio - 1
    shown = (f"candidate/baseline {state.ratio:.3f} [{state.ci[0]:.3f}, {state.ci[1]:.3f}] at {s.confidence:.0%} over "
             f"{state.rounds} launch round(s) of {_pairs(rounds)} pairs")
    test = (f"sequential test at materiality {s.materiality:.0%} (false FAIL {s.primary_alpha:.0%}, power "
            f"{s.primary_power:.0%}): log-likelihood ratio {state.llr:+.2f}, boundaries {state.lower:+.2f} / {state.upper:+.2f}")
    metrics = PrimaryFinding(
        metric=figure.metric, level=PRIMARY_LEVEL, baseline=_mean(figure, blocks, "baseline"),
        candidate=_mean(figure, blocks, "candidate"), materiality=s.materiality, alpha=s.primary_alpha,
        power=s.primary_power, rounds=state.rounds, min_rounds=s.rounds[0], max_rounds=s.rounds[1], ratio=state.ratio,
        ci=state.ci, confidence=s.confidence, llr=state.llr, boundaries=(state.lower, state.upper),
        sigma_round=state.sigma, sigma_model=state.sigma_model,
        pair_sd=math.sqrt(sum(r.variance for r in rounds) / len(rounds)), fixed_design_detectable=state.detectable,
        round_ratios=tuple(math.exp(r.mean) for r in rounds), pairs_per_round=tuple(len(r.log_ratios) for r in rounds),
        launched_first=tuple("baseline" if r.baseline_first else "candidate" for r in rounds), tau_source=tau_source,
        noise=None if noise is None else PrimaryNoise(q=noise.q, df=noise.df, p=noise.p, tau_measured=noise.tau_measured,
                                                      tau_assumed=noise.tau_assumed),
    )
    evidence = [_interval(s, name, state), _table(rounds, state)]
    undecided = False
    if state.noisy:
        assert noise is not None
        status, undecided = Status.WARN, True
        reason = (f"undecided: this machine is noisier than its calibration (τ {noise.tau_measured:.1%} measured between "
                  f"this run's launch rounds, {noise.tau_assumed:.1%} {tau_source}; χ² p={noise.p:.2g}): run on a quieter "
                  f"machine or calibrate it under this load (`gatekeeper perf calibrate`); {shown}")
    elif state.outcome is Outcome.FAIL:
        status, reason = Status.FAIL, f"{worse:.1%} slower in {name} (the primary figure): {test}; {shown}"
    elif state.outcome is Outcome.PASS:
        significant = state.ci[0] > 1
        status = Status.WARN if significant else Status.PASS
        how = (f"significantly worse, by {worse:.1%}, but within the materiality" if significant
               else f"{'worse' if worse > 0 else 'better'} by {abs(worse):.1%}")
        reason = (f"no regression of {s.materiality:.0%} in {name} ({how}); a regression of {s.materiality:.0%} FAILs "
                  f"this test with {s.primary_power:.0%} power (its design): {test}; {shown}")
    elif state.outcome is Outcome.CONTINUE:  # the rounds stopped early: the next one had nothing to compare
        status, undecided = Status.WARN, True
        reason = (f"undecided: launch round {state.rounds + 1} had no comparable block pair of {name}, so the test "
                  f"stopped after {state.rounds} ({test}); {shown}")
    else:
        status, undecided = Status.WARN, True
        reason = (f"undecided after {state.rounds} launch rounds (the policy's most): neither no regression nor one of "
                  f"{s.materiality:.0%} explains {name} well enough ({test}); a quieter machine, a calibration of it "
                  f"(`gatekeeper perf calibrate`) or more rounds (the policy's `rounds`) would tell; {shown}")
    limit = DetectionLimit(s.materiality, name, "regression", s.primary_power, s.materiality)  # the design's
    ctx.check(checks.PRIMARY, status, reason, metrics, evidence, undecided=undecided, limit=limit)


def _pairs(rounds: list[Round]) -> str:
    sizes = sorted({len(r.log_ratios) for r in rounds})
    return str(sizes[0]) if len(sizes) == 1 else f"{sizes[0]}–{sizes[-1]}"


def _interval(s: PerformanceSettings, name: str, state: State) -> Intervals:
    return Intervals(f"{name} at concurrency {PRIMARY_LEVEL}: candidate / baseline", (Interval(
        f"{name} (≤ {1 + s.materiality:.3f})", state.ratio, state.ci[0], state.ci[1], 1 + s.materiality),),
        1.0, "candidate / baseline", is_key=True)


def _table(rounds: list[Round], state: State) -> Table:
    rows = tuple((str(i + 1), "baseline" if r.baseline_first else "candidate", str(len(r.log_ratios)),
                  f"{math.exp(r.mean):.4f}", f"{llr:+.2f}") for i, (r, llr) in enumerate(zip(rounds, state.llr_path)))
    return Table(f"launch rounds (FAIL at {state.upper:+.2f}, PASS at {state.lower:+.2f}; per-round sd "
                 f"{state.sigma:.2%} used, {state.sigma_model:.2%} from τ and the pairs)",
                 ("round", "launched first", "pairs", "candidate / baseline", "log-likelihood ratio"), rows)


def one_process_limit(s: PerformanceSettings, tau: float) -> str:
    """What one process per side can decide (a URL target, a reference the gate does not launch):
    the spread between two processes (τ) stays in every comparison however many pairs are sent, so
    no regression below (z₁₋α + z_power)·√2·τ can be told from a slower process."""
    from scipy import stats

    z = float(stats.norm.ppf(1 - s.primary_alpha) + stats.norm.ppf(s.primary_power))
    limit = math.expm1(z * math.sqrt(2) * math.log1p(tau))
    return (f"with one process per side the spread between processes (τ {tau:.1%}) does not average out: the smallest "
            f"decode regression it can tell from a slower process is {limit:.1%} (materiality {s.materiality:.0%}), "
            "and the budgets below decide at their own sizes; starting both sides from commands (then every launch "
            "round starts them afresh) measures τ and averages it away")


def history_figures(figure: Figure, state: State | None, blocks: LevelBlocks) -> dict[str, float]:
    """The primary figure for the performance history: the candidate's mean over the rounds'
    blocks and the test's ratio (candidate / baseline), under e.g. "c1.decode_s_per_token"."""
    if state is None:
        return {}
    key, mean = f"c{PRIMARY_LEVEL}.{figure.metric}", _mean(figure, blocks, "candidate")
    return {**({key: mean} if mean is not None else {}), f"{key}.ratio": state.ratio}


def _mean(figure: Figure, blocks: LevelBlocks, side: str) -> float | None:
    """One side's mean primary figure over the rounds' blocks (None without any)."""
    values = [v for v in blocks.series(side, figure.metric) if v is not None]
    return sum(values) / len(values) if values else None
