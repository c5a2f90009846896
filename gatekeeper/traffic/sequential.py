"""An anytime-valid paired test for "the candidate fails more often than the reference does".

Each request is answered by the candidate and by a second reference pass (the noise floor). For
one binary measure (disagrees with the reference's first answer, degenerate output, JSON that does
not parse...) only the *discordant* requests carry evidence: "candidate bad, reference twin fine"
(x = 1) or the reverse (x = 0). If the candidate is no worse than another run of the reference,
each discordant request is x = 1 with probability at most 1/2 (exactly 1/2 when they are
exchangeable) — the null of McNemar's test.

The evidence is an e-process: the likelihood ratio of the discordant outcomes under p against
p = 1/2, mixed over p in [1/2, 1] (a mixture SPRT, Robbins 1970; Johari et al. 2017 for A/B
tests). With the prior density π_k(p) ∝ p^k on [1/2, 1], for b ones among n discordant requests

    E_n(k) = 2^n · c_k · ∫_{1/2}^{1} p^(b+k) (1-p)^(n-b) dp = 2^n · c_k · B(b+k+1, n-b+1) · I^c_{1/2}(b+k+1, n-b+1),

with c_k = (k+1) / (1 - 2^-(k+1)) normalising the prior. Each E_n(k) is a nonnegative
supermartingale under every p ≤ 1/2, and so is their average: the gate uses half k = 0 (the
uniform prior, for regressions hidden in a noisy reference) and half k = 20 (mass near p = 1,
for a reference that repeats itself, where every discordant request is the candidate's). By
Ville's inequality P(sup_n E_n ≥ 1/α) ≤ α: the gate may look after every request and stop at
the first crossing without inflating false alarms (`benchmarks/shadow_false_alarms.py` and the
tests show it by simulation). The always-valid p-value is min(1, 1 / max_k E_k). No evidence
is ever stronger than a factor 2 per discordant request (the sign of a symmetric pair): at
alpha = 0.025 no test could fire before six discordant requests, and this mixture fires at seven.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

_LN2 = math.log(2.0)


PRIORS = ((0.5, 0), (0.5, 20))  # (weight, k): the mixture of priors π_k


def _log_e_k(ones: int, discordant: int, k: int) -> float:
    from scipy.special import betaincc, betaln  # imported when a gate judges, not when a plan is made

    a, b = ones + k + 1, discordant - ones + 1
    upper = betaincc(a, b, 0.5)  # the Beta(a, b) mass above 1/2: the prior's support
    if upper <= 0.0:
        return -math.inf
    log_c = math.log(k + 1) - math.log1p(-(2.0 ** -(k + 1)))
    return discordant * _LN2 + log_c + betaln(a, b) + math.log(upper)


def log_e_value(ones: int, discordant: int) -> float:
    """ln E_n for `ones` candidate-only failures among `discordant` requests (0 for none)."""
    if discordant == 0:
        return 0.0
    logs = [math.log(w) + _log_e_k(ones, discordant, k) for w, k in PRIORS]
    top = max(logs)
    return top + math.log(sum(math.exp(x - top) for x in logs)) if top > -math.inf else -math.inf


@dataclass
class PairedEProcess:
    """The running evidence for one measure: update it with each request's (candidate bad,
    twin bad) and read `e_value`, `max_e` (the running maximum, for the always-valid p-value)
    and `crossed_at` (the request count at the first crossing of 1/alpha, or None)."""

    alpha: float
    requests: int = 0
    ones: int = 0  # candidate bad, twin fine
    zeros: int = 0  # twin bad, candidate fine
    log_max_e: float = 0.0
    crossed_at: int | None = None

    def update(self, candidate_bad: bool, twin_bad: bool) -> None:
        """One request's outcome on this measure."""
        self.requests += 1
        if candidate_bad == twin_bad:
            return
        if candidate_bad:
            self.ones += 1
        else:
            self.zeros += 1
        log_e = log_e_value(self.ones, self.ones + self.zeros)
        self.log_max_e = max(self.log_max_e, log_e)
        if self.crossed_at is None and log_e >= -math.log(self.alpha):
            self.crossed_at = self.requests

    @property
    def e_value(self) -> float:
        """The current E_n."""
        return math.exp(log_e_value(self.ones, self.ones + self.zeros))

    @property
    def p_value(self) -> float:
        """The always-valid p-value: min(1, 1 / max_k E_k)."""
        return min(1.0, math.exp(-self.log_max_e))

    @property
    def rejected(self) -> bool:
        """Whether the evidence has crossed 1/alpha at some look."""
        return self.crossed_at is not None
