"""Retries per target, counted and compared: `<gate>.retry_excess`.

The client sends a request again after a transient failure (a 502/503/504, a connection closed
before any answer: gatekeeper/endpoints/retry.py), so one dropped connection never decides a run.
That forgiveness must not hide a candidate that needs it far more often than the reference: a
build whose server drops one kept-alive connection in ten, or answers 503 under light load,
serves its users worse even when every answer arrives in the end.

After each gate the runner counts, per target, the requests sent and the retries made
(`RetryCount`, in summary.json's gate entry) and, when any target needed a retry, compares the
candidate side's share of retried requests (the candidate and the copies of it a gate started)
with the reference side's (the reference, its replica, the performance baselines) by Fisher's
exact test, one-sided (scipy.stats.fisher_exact, alternative="greater"):

- FAIL (advisory: the run HOLDs, it does not ROLLBACK — a network path or a host can cause it as
  well as the build) when the candidate's share is larger beyond chance at `ALPHA`;
- PASS otherwise, saying both shares: transient failures both targets share are noise, judged
  as such.

A 429 waited out (the server's stated quota, e.g. a gateway's rate limit in front of one target)
is counted in the table but not compared: it is a limit the server asks for, not a failure. With
no retry after a failure on either side the check is not written: there is nothing to compare.
Example: "the candidate needed a retry for 41 of 412 requests (10.0%), the reference for 0 of 418
(0.0%): Fisher's exact test p=1.2e-12 < 0.001; connections closed before any answer: 41".
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from gatekeeper.endpoints.client import Endpoint
from gatekeeper.evidence import Table
from gatekeeper.gates.finding import OPTIONAL, Finding
from gatekeeper.gates.interface import GateContext
from gatekeeper.results import Judgement, RetryCount, Status

ALPHA = 0.001  # per gate; six gates at most: a false HOLD in under 1% of clean runs
NAME = "retry_excess"


@dataclass(frozen=True, kw_only=True)
class RetryFinding(Finding):
    """`<gate>.retry_excess`: requests sent and retried after a transient failure per side, the
    test's level, and its p-value once both sides sent requests."""

    candidate_sent: int
    candidate_retried: int
    reference_sent: int
    reference_retried: int
    alpha: float
    p_value: float | None = field(default=None, metadata=OPTIONAL)


def count(endpoints: Iterable[Endpoint], gate_id: str) -> tuple[RetryCount, ...]:
    """Each target's requests sent in `gate_id` and the retries made for them (a role asked
    through several endpoints is summed)."""
    by_role: dict[str, list[int]] = {}
    for ep in endpoints:
        row = by_role.setdefault(ep.role, [0, 0, 0, 0])
        row[0] += ep.sent.get(gate_id, 0)
        mine = [r for r in ep.retried if r.gate == gate_id]
        row[1] += len(mine)
        row[2] += sum(1 for r in mine if r.reconnected)
        row[3] += sum(1 for r in mine if r.status == 429)
    return tuple(RetryCount(role, *row) for role, row in sorted(by_role.items()) if row[0] or row[1])


def candidate_side(role: str) -> bool:
    """Whether a role is the candidate build (the candidate, or a copy a gate launched of it)."""
    return role.startswith("candidate")


def compare(ctx: GateContext, counts: tuple[RetryCount, ...]) -> None:
    """Write `<gate>.retry_excess` when any target needed a retry after a transient failure in
    this gate (a 429 waited out is the server's stated quota, not a failure: not compared)."""
    if not any(c.transient for c in counts):
        return
    cand = [c for c in counts if candidate_side(c.role)]
    ref = [c for c in counts if not candidate_side(c.role)]
    c_sent, c_retried = sum(c.sent for c in cand), min(sum(c.transient for c in cand), sum(c.sent for c in cand))
    r_sent, r_retried = sum(c.sent for c in ref), min(sum(c.transient for c in ref), sum(c.sent for c in ref))
    table = Table("requests and retries per target", ["target", "requests", "retries", "of which reconnected",
                                                      "of which rate-limited (429, not compared)"],
                  [[c.role, c.sent, c.retried, c.reconnected, c.rate_limited] for c in counts])
    found = RetryFinding(candidate_sent=c_sent, candidate_retried=c_retried, reference_sent=r_sent,
                         reference_retried=r_retried, alpha=ALPHA)
    if not c_sent or not r_sent:
        ctx.check(NAME, Status.SKIP, "not compared: " + ("the candidate" if not c_sent else "the reference")
                  + " sent no request in this gate", found, [table], advisory=True)
        return
    p = p_value(c_sent, c_retried, r_sent, r_retried)
    found = replace(found, p_value=p)
    shares = (f"the candidate needed a retry for {c_retried} of {c_sent} requests ({c_retried / c_sent:.1%}), "
              f"the reference side for {r_retried} of {r_sent} ({r_retried / r_sent:.1%})")
    why = _causes(counts)
    if p < ALPHA:
        ctx.check(NAME, Status.FAIL, f"{shares}: more than the reference beyond chance (Fisher's exact test, one-sided, "
                  f"p={p:.2g} < {ALPHA:g}){why}; every answer may have arrived in the end, but the candidate's server "
                  "or its network path fails requests the reference's does not: look at its keep-alive and error logs",
                  found, [table], advisory=True, judgement=Judgement.STATISTICAL)
    else:
        ctx.check(NAME, Status.PASS, f"{shares}: within chance of the reference's (Fisher's exact test, one-sided, "
                  f"p={p:.2g}){why}", found, [table], advisory=True, judgement=Judgement.STATISTICAL)


def p_value(c_sent: int, c_retried: int, r_sent: int, r_retried: int) -> float:
    """One-sided Fisher's exact test: the chance of a candidate share of retried requests at least
    this much above the reference side's if both had the same rate (benchmarks/retry_excess.py)."""
    from scipy.stats import fisher_exact  # when a gate judges, not when a plan is made

    return float(fisher_exact([[c_retried, c_sent - c_retried], [r_retried, r_sent - r_retried]], alternative="greater")[1])


def _causes(counts: tuple[RetryCount, ...]) -> str:
    reconnected = sum(c.reconnected for c in counts)
    return f"; connections closed before any answer: {reconnected}" if reconnected else ""
