"""Small statistics over per-token logprob comparisons (numpy; no engine code).

A figure with no data behind it is None, never a default of "perfect": no shared top-k list means
no top-1 agreement, no top-k overlap and no KL to report, and the gate says so instead of passing."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


from gatekeeper.stats.quantiles import percentile

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
    shared = sorted(set(p_top) & set(q_top))  # one summation order, whatever the process's string hashing
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
class ScoreComparison:
    """How a scored text differs between two targets, over the positions both scored."""

    positions: int
    deltas: tuple[float, ...]
    ranked: tuple[bool, ...]  # per delta: the token is in a's top-k there (True where a has no top-k)
    top1_agreement: float | None  # None: no position where both returned a top-k list
    topk_overlap: float | None
    kl_mean: float | None  # None: no position whose two top-k lists share a token
    nll_a: float
    nll_b: float
    bad_b: int
    missing_b: int = 0  # positions where a has a logprob and b returned none (missing, not NaN)

    @property
    def ranked_deltas(self) -> tuple[float, ...]:
        """The deltas at positions where a ranks the token among its top-k: the tokens the model
        finds plausible. Far below them (an out-of-distribution prompt token at -15 nats) half
        precision alone moves a logprob by several nats, and KL and NLL drift cover those
        positions weighted by their probability."""
        return tuple(d for d, r in zip(self.deltas, self.ranked) if r)

    @property
    def max_delta(self) -> float:
        """Largest absolute logprob difference, over the ranked positions."""
        return max(self.ranked_deltas, default=0.0)

    @property
    def mean_delta(self) -> float:
        """Mean absolute logprob difference, over the ranked positions."""
        return float(np.mean(self.ranked_deltas)) if self.ranked_deltas else 0.0

    @property
    def p99_delta(self) -> float:
        """99th percentile of the absolute logprob difference, over the ranked positions."""
        return percentile(self.ranked_deltas, 99) or 0.0

    @property
    def nll_rel_drift(self) -> float:
        """|NLL_b − NLL_a| / NLL_a of the mean per-token NLL (same as perplexity log-ratio scale)."""
        return abs(self.nll_b - self.nll_a) / max(self.nll_a, 1e-9)


def in_top_k(token: str, logprob: float, top: dict[str, float] | None, k: int) -> bool:
    """Whether `token` ranks among the k most likely at a position (True when no top-k is known).

    Counted as fewer than k other tokens scoring higher, because servers differ: vLLM adds the
    actual token to the top-k dict (k+1 entries), others return exactly the top-k."""
    if not top:
        return True
    return sum(1 for t, v in top.items() if t != token and v > logprob) < k


def compare(a: Scored, b: Scored, top_k: int = 5) -> ScoreComparison:
    """Compare b against a position by position (position 0 has no logprob and is skipped)."""
    deltas, ranked, top1, overlap, kls, nll_a, nll_b = [], [], [], [], [], [], []
    bad_b = sum(1 for x in b.logprobs if is_bad(x)) + sum(
        1 for top in b.tops if top and any(is_bad(v) for v in top.values()))
    missing_b = 0
    for i in range(min(len(a.logprobs), len(b.logprobs))):
        la, lb = a.logprobs[i], b.logprobs[i]
        if la is not None and lb is None:
            missing_b += 1
        if la is None or lb is None or is_bad(la) or is_bad(lb):
            continue
        deltas.append(abs(la - lb))
        ranked.append(in_top_k(a.tokens[i], la, a.tops[i], top_k))
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
    return ScoreComparison(
        positions=len(deltas),
        deltas=tuple(deltas),
        ranked=tuple(ranked),
        top1_agreement=float(np.mean(top1)) if top1 else None,
        topk_overlap=float(np.mean(overlap)) if overlap else None,
        kl_mean=float(np.mean(kls)) if kls else None,
        nll_a=float(np.mean(nll_a)) if nll_a else 0.0,
        nll_b=float(np.mean(nll_b)) if nll_b else 0.0,
        bad_b=bad_b,
        missing_b=missing_b,
    )
