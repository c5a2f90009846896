"""Scoring the sessions round by round: recall, agreement with the reference, SQDR, and the two
statistical tests of session decay.

Sessions are the unit. The cells of one session share their prefix, so they are not independent
samples; each session gives one number per target, the least-squares slope of its recall (1 or 0
per round) over all its rounds, and the candidate's excess decay is the mean over sessions of
(reference slope − candidate slope): positive when the candidate forgets faster. Whether that is
beyond chance is a paired sign-flip permutation test over sessions (`scipy.stats.permutation_test`,
exact for up to 13 sessions' sign patterns): under "the upgrade changes nothing" each session's
two slopes are exchangeable. The recall test is the same for the level: the mean over sessions of
(reference recall − candidate recall), a candidate that recalls less in every round without
decaying. (A test on the *agreement* between the two targets would not be valid: when the
reference is not deterministic, two draws of one engine agree less as recall nears one half, so
agreement falls by itself on harder rounds; `benchmarks/decay_false_alarms.py` measured 14% false
alarms for it at alpha 0.005.)

A limit on a mean is one that a single (session, round) cell cannot cross alone: flipping one
cell moves one session's slope by at most max|r − r̄| / Σ(r − r̄)², its recall by 1/rounds, and
the means by that over the number of sessions (`one_cell`, `one_cell_recall`); the settings
refuse a limit at or below them.

SQDR, the session quality decay rate (docs/bug-classes.md#sqdr), is (pass rate at round 1 − pass
rate at round n) / n per target; the report keeps it as its source defines it (the source calls more
than 0.005 per round unhealthy), beside the slopes the verdict rests on. For a straight-line decline
the two agree; SQDR alone scores a mid-session collapse that recovers as zero.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gatekeeper.detection import POWER
from gatekeeper.stats.decay_rate import sqdr

RESAMPLES = 9999  # above 2^13: exact (every sign pattern) for up to 13 sessions, Monte Carlo beyond


@dataclass(frozen=True, kw_only=True)
class Cell:
    """One (session, round): whether each target recalled the fact, and whether they agree."""

    session: int
    round: int
    tokens: int
    ref_ok: bool
    cand_ok: bool
    agree: bool
    ref_text: str
    cand_text: str


@dataclass(frozen=True, kw_only=True)
class Decay:
    """Per-round curves, per-session slopes and the summary numbers of one decay run."""

    rounds: list[int]
    ref_rates: list[float]
    cand_rates: list[float]
    agreement: list[float]
    sqdr_ref: float
    sqdr_cand: float
    ref_slopes: list[float]  # per session: recall slope over its rounds (pass rate per round)
    cand_slopes: list[float]
    excess_slope: float  # mean over sessions of (reference slope − candidate slope)
    p_value: float  # one-sided permutation test over sessions: the candidate decays faster
    ref_recall: list[float]  # per session: share of its rounds recalled
    cand_recall: list[float]
    recall_drop: float  # mean over sessions of (reference recall − candidate recall)
    recall_p_value: float  # one-sided permutation test over sessions: the candidate recalls less
    one_cell: float  # the most a single (session, round) cell can move the mean slope
    one_cell_recall: float  # ... and the mean recall
    regressions: int  # cells the reference passes and the candidate fails
    improvements: int  # the other way round
    disagreements: int
    cells: int

    @property
    def excess(self) -> float:
        """The candidate's SQDR above the reference's (reported; docs/bug-classes.md#sqdr)."""
        return self.sqdr_cand - self.sqdr_ref

    @property
    def sessions(self) -> int:
        """Sessions with at least two rounds (the ones that have a slope)."""
        return len(self.ref_slopes)


def slope(x: list[int], y: list[float]) -> float:
    """Least-squares slope of y over x (x not all equal)."""
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)  # [n], [n]
    dx = xs - xs.mean()
    return float(dx @ (ys - ys.mean()) / (dx @ dx))


def one_cell_effect(rounds: int, sessions: int) -> float:
    """The most one cell moves a mean slope over `sessions` sessions of rounds 1..`rounds`:
    max|r − r̄| / Σ(r − r̄)² / sessions = 6 / (rounds (rounds + 1) sessions)."""
    return 6.0 / (rounds * (rounds + 1) * sessions)


def _mean_difference(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x - y, axis=axis)


def paired_p(ref: list[float], cand: list[float], seed: int = 0) -> float:
    """One-sided p that mean(ref − cand) > 0 by chance: sign flips of each session's pair."""
    from scipy.stats import permutation_test  # scipy.stats when a gate judges, not when a plan is made (0.4 s of every `run`)

    if not ref or all(a == b for a, b in zip(ref, cand)):
        return 1.0
    res = permutation_test((np.asarray(ref), np.asarray(cand)), _mean_difference, permutation_type="samples",
                           alternative="greater", n_resamples=RESAMPLES, vectorized=True, rng=seed)
    return float(res.pvalue)


def score(cells: list[Cell], seed: int = 0) -> Decay:
    """Curves by round, slopes by session, and the two tests."""
    rounds = sorted({c.round for c in cells})
    by_round = {r: [c for c in cells if c.round == r] for r in rounds}

    def rate(r: int, pred) -> float:
        xs = by_round[r]
        return sum(1 for c in xs if pred(c)) / len(xs)

    ref = [rate(r, lambda c: c.ref_ok) for r in rounds]
    cand = [rate(r, lambda c: c.cand_ok) for r in rounds]
    agree = [rate(r, lambda c: c.agree) for r in rounds]
    sessions: dict[int, list[Cell]] = {}
    for c in cells:
        sessions.setdefault(c.session, []).append(c)
    ref_s, cand_s, ref_r, cand_r, effects, sizes = [], [], [], [], [], []
    for sess in sessions.values():
        x = [c.round for c in sess]
        if len(set(x)) < 2:
            continue
        ref_s.append(slope(x, [c.ref_ok for c in sess]))
        cand_s.append(slope(x, [c.cand_ok for c in sess]))
        ref_r.append(sum(c.ref_ok for c in sess) / len(sess))
        cand_r.append(sum(c.cand_ok for c in sess) / len(sess))
        dx = np.asarray(x, dtype=float) - np.mean(x)
        effects.append(float(np.max(np.abs(dx)) / (dx @ dx)))
        sizes.append(len(sess))
    n = len(ref_s)

    def mean_diff(a: list[float], b: list[float]) -> float:
        return float(np.mean(np.subtract(a, b))) if n else 0.0

    b = sum(1 for c in cells if c.ref_ok and not c.cand_ok)
    w = sum(1 for c in cells if c.cand_ok and not c.ref_ok)
    return Decay(rounds=rounds, ref_rates=ref, cand_rates=cand, agreement=agree, sqdr_ref=sqdr(ref), sqdr_cand=sqdr(cand),
                 ref_slopes=ref_s, cand_slopes=cand_s, excess_slope=mean_diff(ref_s, cand_s),
                 p_value=paired_p(ref_s, cand_s, seed),
                 ref_recall=ref_r, cand_recall=cand_r, recall_drop=mean_diff(ref_r, cand_r),
                 recall_p_value=paired_p(ref_r, cand_r, seed),
                 one_cell=max(effects) / n if n else float("inf"), one_cell_recall=1 / min(sizes) / n if n else float("inf"),
                 regressions=b, improvements=w, disagreements=sum(1 for c in cells if not c.agree), cells=len(cells))


SPREAD_BOUND = 0.8  # the limit uses this upper confidence bound of the sessions' spread, not its estimate


def detectable(ref: list[float], cand: list[float], limit: float, alpha: float, power: float = POWER) -> float:
    """The smallest mean of the per-session differences (reference − candidate) that a decay check
    — FAIL when the mean is above `limit` and the test rejects — catches with `power` in a fresh
    run: max(limit, t₁₋α/₂·se) + t_power·se with t on n − 1 degrees of freedom (the sign-flip test
    approximated by the t-test it tracks; α/2 is Holm's share for the smaller of the two tests) and
    se from the 80% upper confidence bound of the sessions' spread (χ²): an estimated spread is too
    small about half the time, and the point estimate caught only 87–92% at its own limit
    (simulated through `paired_p`; with the bound, 96%: tests/gates/longctx/test_decay_limit.py).
    Sessions that all moved alike (spread 0) leave the limit itself."""
    from scipy.stats import chi2, t  # at judging time, as `paired_p`

    diffs = np.subtract(ref, cand)  # [sessions]
    if len(diffs) < 2:
        return limit
    df = len(diffs) - 1
    spread = float(np.std(diffs, ddof=1)) * float(np.sqrt(df / chi2.ppf(1 - SPREAD_BOUND, df)))
    se = spread / float(np.sqrt(len(diffs)))
    return max(limit, float(t.ppf(1 - alpha / 2, df)) * se) + float(t.ppf(power, df)) * se
