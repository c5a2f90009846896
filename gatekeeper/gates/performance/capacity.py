"""Capacity: a concurrency sweep per target, the knee under the SLOs, and the cost it implies.

At each sweep concurrency, one block on the baseline then one on the candidate (never both at
once), with the engine's own /metrics polled during the block. The knee is the highest
concurrency whose p95 TTFT and p95 TPOT meet the SLOs with no failed request; the cost per 1,000
successful requests is the accelerator-hours the server needs for them at the knee's request
rate, at the policy's price.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gatekeeper.perf.engine_metrics import EngineMetrics
from gatekeeper.perf.figures import Slo, block_figures
from gatekeeper.perf.loadgen import LoadProfile, LoadTarget, run_load
from gatekeeper.perf.workload import Workload
from gatekeeper.gates.performance.measure import SIDES


@dataclass
class SweepPoint:
    """One concurrency of one target's sweep."""

    level: int
    figures: dict[str, float | None]
    engine: dict[str, float] = field(default_factory=dict)

    def meets(self, slo: Slo) -> bool:
        """p95 TTFT and TPOT within the SLOs and nothing failed."""
        f = self.figures
        if f.get("error_rate") or f.get("requests_per_s") is None:
            return False
        for limit, key in ((slo.ttft_s, "ttft_p95_s"), (slo.tpot_s, "tpot_p95_s")):
            value = f.get(key)
            if limit is not None and (value is None or value > limit):
                return False
        return True


def sweep(targets: dict[str, LoadTarget], levels: list[int], workload: Workload, seed: int, slo: Slo,
          progress: Callable[[str], None]) -> dict[str, list[SweepPoint]]:
    """Each side's sweep, level by level, the sides alternating."""
    out: dict[str, list[SweepPoint]] = {s: [] for s in SIDES}
    for level in levels:
        requests = workload.requests(max(4, 2 * level), seed * 104729 + level)
        for side in SIDES:
            with EngineMetrics(targets[side].base_url) as engine:
                result = run_load(targets[side], requests, LoadProfile("concurrent", concurrency=level))
            out[side].append(SweepPoint(level, block_figures(result, slo), engine.summary()))
        progress(f"performance: capacity sweep at concurrency {level}")
    return out


def knee(points: list[SweepPoint], slo: Slo) -> SweepPoint | None:
    """The highest concurrency meeting the SLOs (None: not even the lowest)."""
    meeting = [p for p in points if p.meets(slo)]
    return max(meeting, key=lambda p: p.level) if meeting else None


def cost_per_1000(point: SweepPoint | None, price_per_hour: float, accelerators: int) -> float | None:
    """Price of 1,000 successful requests at the knee's request rate."""
    if point is None or not point.figures.get("requests_per_s"):
        return None
    rps = point.figures["requests_per_s"]
    assert rps is not None
    return price_per_hour * accelerators * 1000.0 / (rps * 3600.0)


def describe_points(points: list[SweepPoint]) -> list[dict[str, Any]]:
    """JSON-ready sweep points."""
    return [{"level": p.level, **{k: v for k, v in p.figures.items()}, "engine": p.engine} for p in points]
