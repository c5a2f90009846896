"""Small statistics over per-token logprob comparisons (numpy; no engine code)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Scored:
    """One text scored teacher-forced: per position, the token, its logprob and the top-k."""

    tokens: tuple[str, ...]
    logprobs: tuple[float | None, ...]
    tops: tuple[dict[str, float] | None, ...]


def is_bad(x: float | None) -> bool:
    """NaN or infinite (None is 'absent', not bad)."""
    return x is not None and not math.isfinite(x)


def kl_shared_topk(p_top: dict[str, float], q_top: dict[str, float]) -> float | None:
    """KL(p || q) over the tokens in both top-k lists, with the remaining mass as one bucket."""
    shared = set(p_top) & set(q_top)
    if not shared:
        return None
    p = np.array([math.exp(p_top[t]) for t in shared])
    q = np.array([math.exp(q_top[t]) for t in shared])
    p_rest, q_rest = max(1.0 - p.sum(), 1e-12), max(1.0 - q.sum(), 1e-12)
    p = np.append(p, p_rest)
    q = np.append(q, q_rest)
    q = np.maximum(q, 1e-12)
    mask = p > 0
    return float(np.sum(p[mask] * np.log(p[mask] / q[mask])))


def _argmax(top: dict[str, float]) -> str:
    return max(top.items(), key=lambda kv: kv[1])[0]


@dataclass(frozen=True)
class Comparison:
    """How a scored text differs between two targets, over the positions both scored."""

    positions: int
    deltas: tuple[float, ...]
    top1_agreement: float
    topk_overlap: float
    kl_mean: float
    nll_a: float
    nll_b: float
    bad_b: int

    @property
    def max_delta(self) -> float:
        """Largest absolute logprob difference."""
        return max(self.deltas, default=0.0)

    @property
    def mean_delta(self) -> float:
        """Mean absolute logprob difference."""
        return float(np.mean(self.deltas)) if self.deltas else 0.0

    @property
    def p99_delta(self) -> float:
        """99th percentile of the absolute logprob difference."""
        return float(np.percentile(self.deltas, 99)) if self.deltas else 0.0

    @property
    def nll_rel_drift(self) -> float:
        """|NLL_b − NLL_a| / NLL_a of the mean per-token NLL (same as perplexity log-ratio scale)."""
        return abs(self.nll_b - self.nll_a) / max(self.nll_a, 1e-9)


def compare(a: Scored, b: Scored) -> Comparison:
    """Compare b against a position by position (position 0 has no logprob and is skipped)."""
    deltas, top1, overlap, kls, nll_a, nll_b = [], [], [], [], [], []
    bad_b = sum(1 for x in b.logprobs if is_bad(x)) + sum(
        1 for top in b.tops if top and any(is_bad(v) for v in top.values()))
    for i in range(min(len(a.logprobs), len(b.logprobs))):
        la, lb = a.logprobs[i], b.logprobs[i]
        if la is None or lb is None or is_bad(la) or is_bad(lb):
            continue
        deltas.append(abs(la - lb))
        nll_a.append(-la)
        nll_b.append(-lb)
        ta, tb = a.tops[i] or {}, b.tops[i] or {}
        if ta and tb:
            top1.append(_argmax(ta) == _argmax(tb))
            k = min(len(ta), len(tb))
            overlap.append(len(set(ta) & set(tb)) / k if k else 0.0)
            kl = kl_shared_topk(ta, tb)
            if kl is not None:
                kls.append(kl)
    return Comparison(
        positions=len(deltas),
        deltas=tuple(deltas),
        top1_agreement=float(np.mean(top1)) if top1 else (0.0 if bad_b else 1.0),
        topk_overlap=float(np.mean(overlap)) if overlap else (0.0 if bad_b else 1.0),
        kl_mean=float(np.mean(kls)) if kls else 0.0,
        nll_a=float(np.mean(nll_a)) if nll_a else 0.0,
        nll_b=float(np.mean(nll_b)) if nll_b else 0.0,
        bad_b=bad_b,
    )
