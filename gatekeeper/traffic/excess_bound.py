"""An anytime-valid upper bound on how much more often the candidate fails a measure than the
reference's twin does — what a gate 5 PASS rules out.

Each judged pair gives X = (candidate bad) − (twin bad) ∈ {−1, 0, 1}; the excess is d = E[X]. For
a margin m, the capital of a bettor against "d ≥ m",

    K_n(m) = Σ_j w_j Π_i (1 + c_j (m − X_i) / (1 − m)),   c_j ∈ (0, 1), Σ w_j = 1,

is a nonnegative supermartingale whenever every pair's conditional mean is at least m (each factor
has mean ≤ 1 and is ≥ 1 − c_j ≥ 0): the betting confidence sequences of Waudby-Smith & Ramdas
(JRSS-B 2024), with a fixed mixture of bets in place of a predictable one. By Ville's inequality
P(∃n: K_n(d) ≥ 1/β) ≤ β, so

    U_n = inf{m : K_n(m) ≥ 1/β}

is an upper bound on d valid at every n at once, whatever the stages, the early stops and the
looks (the optional stopping of the canary and of the live verdict). Because X takes three
values, K_n depends on the counts only — (candidate-only, twin-only, concordant) — so the bound
costs nothing per pair and is computed at a look. K_n(m) increases in m (each factor does), so
U_n is found by bisection.

Half the weight is on one near-maximal bet (c = 0.98): where nothing is discordant, the bound
falls as about 3.7 / n (the best any bound can do is ln(1/β) / n = 3.0 / n), so 420 clean pairs
rule out an excess above 0.9 points. The other half is spread over bets from 0.9 down to 0.01,
for a noisy reference (the best bet is about m / Var X): with the twin and the candidate each
failing 2% independently, 420 pairs bound the excess at about 3.5 points.
"""

from __future__ import annotations

import functools
import math

BETS: tuple[tuple[float, float], ...] = ((0.5, 0.98), *((0.5 / 13, c) for c in (
    0.9, 0.8, 0.65, 0.5, 0.35, 0.25, 0.15, 0.1, 0.06, 0.04, 0.025, 0.015, 0.01)))
"""(weight, c): the fixed mixture of bets."""
LEVEL = 0.05  # β: the bound holds with probability 95%, at every look
_STEPS = 40  # bisection steps: the bound to within 2^-39 of the excess's range
_TERMS = tuple((math.log(w), math.log1p(-c), c) for w, c in BETS)  # per bet: ln w, ln(1 − c), c


def log_capital(m: float, ones: int, minus: int, zeros: int) -> float:
    """ln K_n(m) after `ones` candidate-only, `minus` twin-only and `zeros` concordant pairs (m < 1)."""
    logs = []
    for log_w, log_lose, c in _TERMS:
        lam = c / (1.0 - m)
        log = log_w + ones * log_lose + minus * math.log1p(lam * (m + 1.0))
        log += zeros * math.log1p(lam * m) if zeros else 0.0
        logs.append(log)
    top = max(logs)
    return top + math.log(sum(math.exp(x - top) for x in logs))


@functools.lru_cache(maxsize=1 << 16)
def upper_bound(ones: int, minus: int, zeros: int, level: float = LEVEL) -> float:
    """U_n: the excess (share of the pairs) above which the counts rule out, at `level`, anytime
    (memoised: a pure function of the counts, asked again at every look and by every slice)."""
    line = -math.log(level)
    lo, hi = -1.0, 1.0  # K_n(−1) ≤ 1 < 1/β: −1 is never ruled out; near 1 every bet wins unless X = 1
    if log_capital(1.0 - 1e-12, ones, minus, zeros) < line:
        return 1.0
    for _ in range(_STEPS):
        mid = (lo + hi) / 2.0
        if log_capital(mid, ones, minus, zeros) >= line:
            hi = mid
        else:
            lo = mid
    return hi


def pairs_to_decide(ones: int, minus: int, zeros: int, margin: float, most: int = 10**7) -> int | None:
    """About how many judged pairs in all, at the rates seen so far, would bring the bound to
    `margin` (None: not within `most`, or the excess seen is itself at or above the margin)."""
    n = ones + minus + zeros
    if n == 0 or (ones - minus) / n >= margin:
        return None
    if upper_bound(ones, minus, zeros) <= margin:
        return n
    lo, hi = 1.0, 2.0
    while upper_bound(round(ones * hi), round(minus * hi), round(zeros * hi)) > margin:
        lo, hi = hi, hi * 2
        if n * hi > most:
            return None
    for _ in range(20):
        mid = (lo + hi) / 2.0
        if upper_bound(round(ones * mid), round(minus * mid), round(zeros * mid)) > margin:
            lo = mid
        else:
            hi = mid
    return math.ceil(n * hi)
