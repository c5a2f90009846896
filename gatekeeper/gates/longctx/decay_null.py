"""The null model of session decay, for measuring the decay tests' false-alarm rate (a test and
`benchmarks/decay_false_alarms.py` use it): reference and candidate are the same engine, and the
cells of a session are dependent (a target answers the next round as it did the last with
probability `stickiness`), as on a server where a fact once lost stays lost."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gatekeeper.gates.longctx.decay import Cell, score
from gatekeeper.stats.holm import holm


@dataclass(frozen=True)
class NullRates:
    """Counts of false alarms over `runs` null runs."""

    runs: int
    gate_alarms: int  # Holm-adjusted p below alpha on a check whose value crosses its limit (a FAIL)
    test_alarms: int  # some Holm-adjusted p below alpha, limits ignored
    pooled_alarms: int  # the pooled sign test over cells below alpha


def _target(rng: np.random.Generator, recall: np.ndarray, stickiness: float) -> np.ndarray:
    ok = np.empty(len(recall), dtype=bool)  # [rounds]
    ok[0] = rng.random() < recall[0]
    for r in range(1, len(recall)):
        ok[r] = ok[r - 1] if rng.random() < stickiness else rng.random() < recall[r]
    return ok


def null_cells(rng: np.random.Generator, sessions: int, rounds: int, stickiness: float) -> list[Cell]:
    """One null run: both targets drawn from the same per-session recall curve."""
    cells = []
    for s in range(sessions):
        floor = rng.uniform(0.2, 0.9)
        recall = np.linspace(0.95, floor, rounds)  # [rounds]
        ref, cand = _target(rng, recall, stickiness), _target(rng, recall, stickiness)
        cells += [Cell(session=s, round=r + 1, tokens=0, ref_ok=bool(a), cand_ok=bool(b), agree=bool(a == b), ref_text="",
                       cand_text="") for r, (a, b) in enumerate(zip(ref, cand))]
    return cells


def simulate(runs: int, sessions: int, rounds: int, alpha: float, limit: float, recall_limit: float,
             stickiness: float, seed: int = 0) -> NullRates:
    """False alarms over `runs` null runs."""
    from scipy.stats import binomtest  # scipy.stats when a gate judges, not when a plan is made (0.4 s of every `run`)

    rng = np.random.default_rng(seed)
    gate = tests = pooled = 0
    for i in range(runs):
        d = score(null_cells(rng, sessions, rounds, stickiness), seed=i)
        p_decay, p_recall = holm([d.p_value, d.recall_p_value])
        gate += (p_decay < alpha and d.excess_slope > limit) or (p_recall < alpha and d.recall_drop > recall_limit)
        tests += min(p_decay, p_recall) < alpha
        n = d.regressions + d.improvements
        pooled += bool(n) and binomtest(d.regressions, n, 0.5, alternative="greater").pvalue < alpha
    return NullRates(runs, gate, tests, pooled)
