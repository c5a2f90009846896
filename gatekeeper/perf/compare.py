"""Candidate vs baseline on interleaved blocks: the ratio, its interval, the noise floor, the verdict.

Blocks are measured one target at a time in counterbalanced pairs (A B, B A, A B …), so a drift
of the machine hits both sides alike; pair i gives d_i = log(candidate_i / baseline_i). The
ratio is exp(mean d) with Student's t interval on the mean log ratio (at 6–12 pairs the
bootstrap's percentile and BCa intervals cover less than they claim, the t interval on log ratios
is exact for log-normal block noise and close otherwise).

Two launches of one build are not equally fast: each side is one process, and the spread τ
between processes (`launch_spread`, measured on this machine by `benchmarks/perf_noise.py`) does
not shrink with more pairs. So the standard error of the mean log ratio is
sqrt(s²/n + 2τ²/K) — s the pairs' spread, n pairs, K launches per side — not s/√n, which would
turn a slower process into a significant regression given pairs enough (statistics review H3).
With τ = 0 the test is `scipy.stats.ttest_1samp`'s exactly.

The noise floor is the baseline against itself: its blocks of pairs 2k and 2k+1, which send
requests of the same lengths in other words (`measure_level`), so their ratio is the machine's
drift. (An earlier version paired baseline blocks of unrelated requests: the request mix
inflated the floor to 8–14% at concurrency 1 and hid a 10–16% TPOT slowdown. Repeating the very
same requests is no better: the prefix cache answers the repeat up to 5× faster.) A regression counts only when it is

- *significant*: the one-sided t test that the candidate is worse has a p-value below the
  family-wise alpha after Holm's correction over every judged metric and level (the gate does
  the correction), and
- *material*: the estimated ratio is worse than the policy's budget, and worse than the noise
  floor's own ratio (the baseline's drift against itself), whichever is larger — the drift
  widens the threshold to at most twice the budget (`NOISE_CAP`: a point estimate of a drift
  must not excuse any regression).

A baseline that drifts against itself therefore widens the threshold to its own drift (Diffy's
rule: only what the candidate adds beyond the noise counts); `noise_unstable` says when that
drift was itself significant and beyond the budget, and the report says so.

Three outcomes: `regressed` (significant and material), `excluded` (the interval's worst end is
within the threshold: no regression beyond it, a non-inferiority decision), or neither —
undecided, which the gate reports as such and which holds the run where the check is blocking.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

MIN_PAIRS = 3
NOISE_CAP = 2.0  # the noise floor widens a threshold to at most this many budgets


@dataclass(frozen=True)
class Budget:
    """A metric and how much worse the candidate may be (a fraction: 0.02 = 2%). `family`:
    the Holm family it is corrected in ("guardrail", blocking; "tail", advisory until the spread of
    tail latencies between launches is calibrated). `needs_calibration`: the budget is tighter
    than an assumed τ can decide, so the metric is judged in the advisory "uncalibrated" family
    until this machine's τ for it is calibrated (`gatekeeper perf calibrate`). `cpu_time`: the
    metric is the server's CPU time, which decides only for an engine that runs on the CPU (a GPU
    engine's is its host overhead: the advisory "host-overhead" family)."""

    metric: str
    higher_is_better: bool
    limit: float
    family: str = "guardrail"
    needs_calibration: bool = False
    cpu_time: bool = False

    def describe(self) -> str:
        """e.g. "output_tokens_per_s −2%"."""
        return f"{self.metric} {'−' if self.higher_is_better else '+'}{self.limit:.0%}"


@dataclass(frozen=True, kw_only=True)
class Comparison:
    """One metric at one load level. Ratios are candidate/baseline (noise: baseline/baseline)."""

    metric: str
    level: str
    pairs: int
    baseline: float | None  # mean of the baseline's blocks
    candidate: float | None
    ratio: float | None
    ci: tuple[float, float] | None
    noise_ratio: float | None
    noise_ci: tuple[float, float] | None
    limit: float
    threshold: float  # the material threshold used: max(limit, the noise floor's drift), as a fraction
    p_worse: float | None  # one-sided p-value that the candidate is worse (before Holm)
    higher_is_better: bool
    unjudged: str | None = None  # why nothing was decided
    noise_p: float | None = None  # two-sided p-value of the baseline against itself
    spread: float = 0.0  # τ, the launch-to-launch spread put in the standard error
    family: str = "guardrail"

    @property
    def worse_by(self) -> float | None:
        """How much worse the candidate is, as a fraction (negative: better)."""
        if self.ratio is None:
            return None
        return (1 - self.ratio) if self.higher_is_better else (self.ratio - 1)

    @property
    def worse_bound(self) -> float | None:
        """The interval's worst end, as "worse by" (how large a regression the data still allow)."""
        if self.ci is None:
            return None
        return (1 - self.ci[0]) if self.higher_is_better else (self.ci[1] - 1)

    def excluded(self) -> bool:
        """The interval rules out a regression beyond the threshold (what a PASS needs)."""
        return self.worse_bound is not None and self.worse_bound <= self.threshold

    def material(self) -> bool:
        """Worse than the budget and the noise floor."""
        return self.worse_by is not None and self.worse_by > self.threshold

    def noise_unstable(self, alpha: float) -> bool:
        """The baseline differs from itself significantly and by more than the budget."""
        return self.noise_ratio is not None and self.noise_p is not None and self.noise_p < alpha \
            and abs(self.noise_ratio - 1) > self.limit


def log_ratios(num: Sequence[float | None], den: Sequence[float | None]) -> np.ndarray:
    """log(num[i] / den[i]) over the pairs where both are positive numbers."""
    pairs = [(a, b) for a, b in zip(num, den) if a is not None and b is not None and a > 0 and b > 0]
    return np.array([math.log(a / b) for a, b in pairs], dtype=float)  # [pairs]


def _t(d: np.ndarray, confidence: float, alternative: str = "two-sided", spread: float = 0.0,
       launches: int = 1) -> tuple[float, tuple[float, float], float]:
    """exp(mean), its t interval, and the p-value for `alternative` (mean > 0 for "greater"),
    with the standard error sqrt(s²/n + 2τ²/K) on n − 1 degrees of freedom (τ = `spread`, K =
    `launches` per side; τ = 0 is the one-sample t test)."""
    from scipy import stats  # scipy.stats when a gate judges, not when a plan is made (0.4 s of every `run`)

    n, mean = len(d), float(d.mean())
    var_tau = 2 * math.log1p(spread) ** 2 / launches
    if float(d.std()) == 0.0 and var_tau == 0.0:  # identical blocks: no spread to test against
        p = 0.0 if (mean > 0 if alternative == "greater" else mean != 0) else 1.0
        return math.exp(mean), (math.exp(mean), math.exp(mean)), p
    se = math.sqrt(float(d.var(ddof=1)) / n + var_tau)
    df = n - 1
    t = mean / se
    p = float(stats.t.sf(t, df)) if alternative == "greater" else float(2 * stats.t.sf(abs(t), df))
    half = float(stats.t.ppf((1 + confidence) / 2, df)) * se
    return math.exp(mean), (math.exp(mean - half), math.exp(mean + half)), p


def compare(budget: Budget, level: str, baseline: Sequence[float | None], candidate: Sequence[float | None],
            confidence: float, spread: float = 0.0, launches: int = 1) -> Comparison:
    """Compare block figures (baseline[i] and candidate[i] measured back to back), with the
    launch-to-launch spread `spread` (τ) of `launches` launches per side in the standard error."""
    d = log_ratios(candidate, baseline)  # [pairs]: log(candidate / baseline)
    base_vals = [b for b in baseline if b is not None]
    cand_vals = [c for c in candidate if c is not None]
    base_mean = float(np.mean(base_vals)) if base_vals else None
    cand_mean = float(np.mean(cand_vals)) if cand_vals else None
    if len(d) < MIN_PAIRS:
        return Comparison(metric=budget.metric, level=level, pairs=len(d), baseline=base_mean, candidate=cand_mean, ratio=None, ci=None,
                          noise_ratio=None, noise_ci=None, limit=budget.limit, threshold=budget.limit, p_worse=None,
                          higher_is_better=budget.higher_is_better,
                          unjudged=f"{len(d)} comparable block pairs (at least {MIN_PAIRS} needed)", spread=spread, family=budget.family)
    worse = -d if budget.higher_is_better else d  # [pairs]: > 0 where the candidate is worse
    _, _, p_worse = _t(worse, confidence, "greater", spread, launches)
    ratio, ci, _ = _t(d, confidence, spread=spread, launches=launches)
    noise = log_ratios(baseline[1::2], baseline[0::2])  # the baseline's two blocks of each request set
    noise_ratio = noise_ci = noise_p = None
    threshold = budget.limit
    if len(noise) >= 2:
        noise_ratio, noise_ci, noise_p = _t(noise, confidence)  # within one launch: no τ
        threshold = max(budget.limit, min(abs(noise_ratio - 1), NOISE_CAP * budget.limit))
    return Comparison(metric=budget.metric, level=level, pairs=len(d), baseline=base_mean, candidate=cand_mean, ratio=ratio, ci=ci,
                      noise_ratio=noise_ratio, noise_ci=noise_ci, limit=budget.limit, threshold=threshold, p_worse=p_worse,
                      higher_is_better=budget.higher_is_better, noise_p=noise_p, spread=spread, family=budget.family)
