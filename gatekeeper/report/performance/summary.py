"""The performance summary: latency and throughput per target, as observed during the gates.

Built from `RunResult.timings` (one `RequestTiming` per request the client made) and each
target's `startup_s`. Per target: startup time, TTFT p50/p95 (streamed requests only), time per
output token p50/p95 (streamed requests with at least two output tokens: the decode time after
the first token divided by the remaining tokens), end-to-end latency p50/p95 and output tokens/s
(all output tokens over all request time, i.e. per-request speed, not server throughput).

Speed of a wrong answer is not a result. The candidate's figures are flagged "not meaningful"
unless the verdict is PROMOTE, and a per-gate row is flagged when its gate did not pass. The
reference, the trusted baseline, is always meaningful.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Iterable

from gatekeeper.json_types import JsonObject
from gatekeeper.gates.performance.checks import GATE as PERFORMANCE_GATE
from gatekeeper.stats.quantiles import percentile
from gatekeeper.results import RequestTiming, RunResult, Status, Verdict
from gatekeeper.verdict import decide

_PASSED = (Status.PASS, Status.WARN)


@dataclass(frozen=True)
class Quantiles:
    """p50 and p95 of a sample (None when the sample is empty) and its size."""

    p50: float | None
    p95: float | None
    count: int


@dataclass(frozen=True)
class TargetPerformance:
    """One target's figures over a set of requests."""

    role: str
    scope: str  # "all" or a gate id
    num_requests: int
    num_streamed: int
    startup_s: float | None
    ttft_s: Quantiles
    tpot_s: Quantiles
    e2e_s: Quantiles
    output_tokens: int
    output_tokens_per_s: float | None
    meaningful: bool
    not_meaningful_reason: str | None


@dataclass(frozen=True)
class PerformanceSummary:
    """Everything the performance report shows: overall rows per target, then per gate."""

    verdict: str
    targets: tuple[TargetPerformance, ...]
    by_gate: tuple[TargetPerformance, ...]
    candidate_vs_reference: dict[str, float | None]

    def to_dict(self) -> JsonObject:
        """JSON-ready form (the `performance` block of summary.json)."""
        return asdict(self)


def _quantiles(values: list[float]) -> Quantiles:
    return Quantiles(p50=percentile(values, 50), p95=percentile(values, 95), count=len(values))


def _figures(
    role: str,
    scope: str,
    timings: Iterable[RequestTiming],
    startup_s: float | None,
    not_meaningful_reason: str | None,
) -> TargetPerformance:
    rows = list(timings)
    streamed = [t for t in rows if t.ttft_s is not None]
    tpot = [
        (t.e2e_s - t.ttft_s) / (t.output_tokens - 1)
        for t in streamed
        if t.ttft_s is not None and t.output_tokens > 1
    ]
    total_tokens = sum(t.output_tokens for t in rows)
    total_time = sum(t.e2e_s for t in rows)
    return TargetPerformance(
        role=role,
        scope=scope,
        num_requests=len(rows),
        num_streamed=len(streamed),
        startup_s=startup_s,
        ttft_s=_quantiles([t.ttft_s for t in streamed if t.ttft_s is not None]),
        tpot_s=_quantiles(tpot),
        e2e_s=_quantiles([t.e2e_s for t in rows]),
        output_tokens=total_tokens,
        output_tokens_per_s=total_tokens / total_time if total_time > 0 else None,
        meaningful=not_meaningful_reason is None,
        not_meaningful_reason=not_meaningful_reason,
    )


def _ratio(candidate: float | None, reference: float | None) -> float | None:
    if candidate is None or reference is None or reference == 0:
        return None
    return candidate / reference


def summarize_performance(run: RunResult) -> PerformanceSummary:
    """Compute the performance summary of a run (a pure function of `run`)."""
    roles = [t.role for t in run.targets]
    roles += sorted({t.target for t in run.timings} - set(roles))
    startup = {t.role: t.startup_s for t in run.targets}
    run_reason = None
    judged = [g for g in run.gates if g.id != PERFORMANCE_GATE]  # the performance gate's own outcome is not correctness
    correctness, _ = decide(judged) if judged else (Verdict.PROMOTE, [])
    if correctness != Verdict.PROMOTE and run.verdict != Verdict.PROMOTE:
        run_reason = f"correctness did not pass (verdict {correctness.value})"

    def reason_for(role: str, extra: str | None = None) -> str | None:
        if role == "reference":
            return None
        return extra or run_reason

    overall = tuple(
        _figures(role, "all", (t for t in run.timings if t.target == role), startup.get(role), reason_for(role))
        for role in roles
    )
    by_gate = []
    for gate in run.gates:
        gate_timings = [t for t in run.timings if t.gate == gate.id]
        if not gate_timings:
            continue
        gate_reason = None
        if gate.status not in _PASSED:
            gate_reason = f"gate {gate.id} did not pass ({gate.status.value})"
        for role in roles:
            rows = [t for t in gate_timings if t.target == role]
            if rows:
                by_gate.append(_figures(role, gate.id, rows, None, reason_for(role, gate_reason)))

    ref = next((p for p in overall if p.role == "reference"), None)
    cand = next((p for p in overall if p.role == "candidate"), None)
    ratios: dict[str, float | None] = {}
    if ref is not None and cand is not None:
        ratios = {
            "startup_s": _ratio(cand.startup_s, ref.startup_s),
            "ttft_p50": _ratio(cand.ttft_s.p50, ref.ttft_s.p50),
            "tpot_p50": _ratio(cand.tpot_s.p50, ref.tpot_s.p50),
            "e2e_p50": _ratio(cand.e2e_s.p50, ref.e2e_s.p50),
            "output_tokens_per_s": _ratio(cand.output_tokens_per_s, ref.output_tokens_per_s),
        }
    return PerformanceSummary(
        verdict=run.verdict.value, targets=overall, by_gate=tuple(by_gate), candidate_vs_reference=ratios
    )
