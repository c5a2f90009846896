"""Capacity: a concurrency sweep per target, the knee under the SLOs, and the cost it implies.

At each sweep concurrency, one block on the baseline then one on the candidate (never both at
once), with the engine's own /metrics polled during the block. The knee is the highest
concurrency up to which every swept level's p95 TTFT and p95 TPOT meet the SLOs with no failed
request (a level that passes above one that missed is not capacity); the cost per 1,000
successful requests is the accelerator-hours the server needs for them at the knee's request
rate, at the policy's price. `sweep_curve` draws one figure of the sweep, with its SLO.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from gatekeeper.evidence import Series
from gatekeeper.perf.engine_metrics import EngineMetrics
from gatekeeper.perf.figures import Slo, block_figures
from gatekeeper.perf.loadgen import LoadProfile, LoadTarget, run_load
from gatekeeper.perf.workload import Workload
from gatekeeper.perf.measure import SIDES


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
    """The highest concurrency up to which every swept level meets the SLOs (None: not even the
    lowest). A level that meets them above one that missed is no knee: the side already missed
    its target at a lower load, so that pass is luck (a queue that happened to drain), not capacity."""
    best = None
    for p in sorted(points, key=lambda p: p.level):
        if not p.meets(slo):
            break
        best = p
    return best


def cost_per_1000(point: SweepPoint | None, price_per_hour: float, accelerators: int) -> float | None:
    """Price of 1,000 successful requests at the knee's request rate."""
    if point is None or not point.figures.get("requests_per_s"):
        return None
    rps = point.figures["requests_per_s"]
    assert rps is not None
    return price_per_hour * accelerators * 1000.0 / (rps * 3600.0)


SweepRow = dict[str, int | float | None | dict[str, float]]
"""A sweep point as the capacity check's metrics hold it: its level, its figures and the engine's."""


def describe_points(points: list[SweepPoint]) -> list[SweepRow]:
    """JSON-ready sweep points."""
    return [{"level": p.level, **{k: v for k, v in p.figures.items()}, "engine": p.engine} for p in points]


def sweep_curve(title: str, points: dict[str, list[SweepPoint]], key: str, unit: str, scale: float = 1.0,
                slo: float | None = None) -> Series:
    """One figure of the capacity sweep per side (a key chart), in `unit` (the figure × `scale`),
    with the SLO as a line where it is near enough to the figures to be drawn on their scale (else
    the title gives it). A level without the figure is not plotted."""
    def value(p: SweepPoint) -> float:
        v = p.figures.get(key)
        return float("nan") if v is None else v * scale

    ys = {side: tuple(value(p) for p in points[side]) for side in SIDES}
    top = max((v for vals in ys.values() for v in vals if v == v), default=0.0)  # v == v: not NaN
    if slo:
        if slo * scale <= 5 * top:
            ys[f"SLO {slo * scale:g} {unit}"] = tuple(slo * scale for _ in points["baseline"])
        else:
            title += f"; SLO {slo * scale:g} {unit}, off this scale"
    return Series(title, [p.level for p in points["baseline"]], ys, "concurrency", unit, is_key=True)
