"""Scoring the sessions round by round: recall, agreement with the reference, and SQDR.

SQDR, the session quality decay rate of seed 000, is (pass rate at round 1 − pass rate at round
n) / n, per target; the candidate's excess over the reference is what the policy limits (the
seed calls more than 0.005 per round unhealthy). With a dozen sessions a single unlucky answer
moves a pass rate by 1/12, so an excess above the threshold fails only when the candidate's
round-by-round losses are also more than chance: a one-sided sign test over the (session,
round) cells the reference passes and the candidate fails against those the other way round.
"""

from __future__ import annotations

from dataclasses import dataclass

from scipy.stats import binomtest


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class Decay:
    """Per-round curves and the summary numbers of one decay run."""

    rounds: list[int]
    ref_rates: list[float]
    cand_rates: list[float]
    agreement: list[float]
    sqdr_ref: float
    sqdr_cand: float
    regressions: int  # cells the reference passes and the candidate fails
    improvements: int  # the other way round
    p_value: float  # one-sided sign test: the candidate loses more cells than chance
    disagreements: int
    cells: int

    @property
    def excess(self) -> float:
        """The candidate's SQDR above the reference's."""
        return self.sqdr_cand - self.sqdr_ref


def sqdr(rates: list[float]) -> float:
    """(rate at round 1 − rate at round n) / n; 0 for fewer than two rounds."""
    return (rates[0] - rates[-1]) / len(rates) if len(rates) > 1 else 0.0


def score(cells: list[Cell]) -> Decay:
    """Curves by round and the summary numbers."""
    rounds = sorted({c.round for c in cells})
    by_round = {r: [c for c in cells if c.round == r] for r in rounds}

    def rate(r: int, pred) -> float:
        xs = by_round[r]
        return sum(1 for c in xs if pred(c)) / len(xs)

    ref = [rate(r, lambda c: c.ref_ok) for r in rounds]
    cand = [rate(r, lambda c: c.cand_ok) for r in rounds]
    agree = [rate(r, lambda c: c.agree) for r in rounds]
    b = sum(1 for c in cells if c.ref_ok and not c.cand_ok)
    w = sum(1 for c in cells if c.cand_ok and not c.ref_ok)
    p = binomtest(b, b + w, 0.5, alternative="greater").pvalue if b + w else 1.0
    return Decay(rounds, ref, cand, agree, sqdr(ref), sqdr(cand), b, w, float(p),
                 sum(1 for c in cells if not c.agree), len(cells))
