"""The primary decode figure decided in launch rounds: Wald's sequential probability ratio test.

A round is one fresh launch per side, a warm-up, then m block pairs at concurrency 1; it gives
D_r, the mean of its pairs' log ratios (candidate / baseline, > 0: the candidate is slower).
Between rounds each side is a new process, so D_r carries the spread between two launches of one
build (τ) as well as the pairs' noise: var(D_r) = 2τ² + s²/m (`perf/compare.py`'s model, K = 1).

The two hypotheses are H0: no regression (Δ = 0) and H1: a regression of the policy's
materiality δ₁ (default 5%, on the log scale). After round R the log-likelihood ratio of normal
round means with variance σ² is

    LLR_R = δ₁/σ² · Σ_r (D_r − δ₁/2)

FAIL when it reaches ln((1 − β)/α), PASS when it falls to ln(β/(1 − α)) (Wald's boundaries,
α the false-FAIL rate, β the false-PASS rate at δ₁), otherwise one more round — no decision
before `min_rounds` (round means are few: their spread must be seen before it is trusted), HOLD
at `max_rounds`. A regression of δ₁/2 is the indifference point (it FAILs about half the time).

σ² is max(2τ² + s̄²/m, the sample variance of the D_r) each time the test is evaluated: τ from
the machine's calibration (or the policy's assumed `launch_spread`), s̄² the pairs' pooled
within-round variance — and where the rounds themselves scatter more, their own spread. So a
stale calibration or a busy machine slows the test down instead of turning noise into FAILs
(statistics review 2026-12 §1.3: false FAIL 18.5% without the guard, 3.7% with it).

The in-run noise check: the rounds of one run are an A/A of the machine (a constant regression
moves every D_r alike), so Q = Σ(D_r − D̄)² / (2τ² + s̄²/m) follows χ² with R − 1 degrees of
freedom when τ is right; a Q beyond its 1 − `noise_alpha` quantile says this machine is noisier
than its calibration, with τ as measured in this run, √(max(0, var(D_r) − s̄²/m)/2).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

import numpy as np


class Outcome(Enum):
    """Where the test stands after a round."""

    FAIL = "fail"  # the upper boundary: a regression of the materiality is the better explanation
    PASS = "pass"  # the lower boundary: no regression is
    CONTINUE = "continue"  # neither yet: one more round
    UNDECIDED = "undecided"  # neither at the last round the policy allows


@dataclass(frozen=True)
class Design:
    """The test's parameters: `materiality` δ₁ (a fraction: 0.05 = 5% slower), `alpha` (false
    FAIL) and `beta` (false PASS at δ₁), `tau` (the launch spread, a fraction), rounds from
    `min_rounds` to `max_rounds`, and the noise check's `noise_alpha`."""

    materiality: float
    alpha: float = 0.05
    beta: float = 0.05
    tau: float = 0.025
    min_rounds: int = 3
    max_rounds: int = 12
    noise_alpha: float = 0.01

    @property
    def delta(self) -> float:
        """δ₁ on the log scale."""
        return math.log1p(self.materiality)

    @property
    def upper(self) -> float:
        """The FAIL boundary, ln((1 − β)/α)."""
        return math.log((1 - self.beta) / self.alpha)

    @property
    def lower(self) -> float:
        """The PASS boundary, ln(β/(1 − α))."""
        return math.log(self.beta / (1 - self.alpha))


@dataclass(frozen=True)
class Round:
    """One launch round of the primary figure: its block pairs' log ratios (candidate / baseline),
    and which side was launched first."""

    log_ratios: tuple[float, ...]
    baseline_first: bool = True

    @property
    def mean(self) -> float:
        """D_r: the round's mean log ratio."""
        return float(np.mean(self.log_ratios))

    @property
    def variance(self) -> float:
        """The pairs' sample variance within the round (0 with one pair)."""
        return float(np.var(self.log_ratios, ddof=1)) if len(self.log_ratios) > 1 else 0.0


@dataclass(frozen=True)
class NoiseCheck:
    """The in-run χ² test of the rounds' spread against the assumed or calibrated τ."""

    q: float
    df: int
    p: float
    tau_measured: float
    tau_assumed: float
    noisy: bool


@dataclass(frozen=True, kw_only=True)
class State:
    """The test after its last round: the outcome, the LLR and its boundaries, σ (the per-round
    sd used: the model's or the rounds' own, whichever is larger), the estimate (a ratio,
    candidate / baseline) with its t interval over round means at `confidence`, the noise check
    (None before two rounds), and `detectable`: the regression a fixed design of these rounds
    would detect with power 1 − β at level α (one-sided; the PASS's detection limit)."""

    outcome: Outcome
    rounds: int
    llr: float
    upper: float
    lower: float
    sigma: float
    sigma_model: float
    ratio: float
    ci: tuple[float, float]
    noise: NoiseCheck | None
    detectable: float
    llr_path: tuple[float, ...]

    @property
    def noisy(self) -> bool:
        """The test stopped and its rounds scatter beyond τ: the noise check overrules the outcome."""
        return self.outcome is not Outcome.CONTINUE and self.noise is not None and self.noise.noisy

    @property
    def decided(self) -> Outcome:
        """What the gate acts on: the outcome, UNDECIDED where the noise check overrules it."""
        return Outcome.UNDECIDED if self.noisy else self.outcome


def evaluate(rounds: Sequence[Round], design: Design, confidence: float = 0.90) -> State:
    """The test after `rounds` (at least one, each with at least one pair)."""
    from scipy import stats  # only when a gate judges

    assert rounds and all(r.log_ratios for r in rounds)
    means = np.array([r.mean for r in rounds])  # [R]
    n = len(rounds)
    m = float(np.mean([len(r.log_ratios) for r in rounds]))
    pooled = float(np.mean([r.variance for r in rounds]))
    tau_log = math.log1p(design.tau)
    model = 2 * tau_log ** 2 + pooled / m
    measured = float(np.var(means, ddof=1)) if n > 1 else 0.0
    var = max(model, measured, 1e-12)
    d = design.delta
    path = tuple(d / var * float(np.sum(means[:k] - d / 2)) for k in range(1, n + 1))
    llr = path[-1]
    if n >= design.min_rounds and llr >= design.upper:
        outcome = Outcome.FAIL
    elif n >= design.min_rounds and llr <= design.lower:
        outcome = Outcome.PASS
    elif n >= design.max_rounds:
        outcome = Outcome.UNDECIDED
    else:
        outcome = Outcome.CONTINUE
    mean = float(means.mean())
    se = math.sqrt(var / n)
    half = float(stats.t.ppf((1 + confidence) / 2, max(n - 1, 1))) * se
    noise = None
    if n > 1:
        q = float(np.sum((means - mean) ** 2)) / max(model, 1e-12)
        p = float(stats.chi2.sf(q, n - 1))
        tau_measured = math.expm1(math.sqrt(max(0.0, (measured - pooled / m) / 2)))
        noise = NoiseCheck(q, n - 1, p, tau_measured, design.tau, p < design.noise_alpha)
    z = float(stats.norm.ppf(1 - design.alpha) + stats.norm.ppf(1 - design.beta))
    return State(outcome=outcome, rounds=n, llr=llr, upper=design.upper, lower=design.lower, sigma=math.sqrt(var),
                 sigma_model=math.sqrt(model), ratio=math.exp(mean), ci=(math.exp(mean - half), math.exp(mean + half)), noise=noise,
                 detectable=math.expm1(z * se), llr_path=path)
