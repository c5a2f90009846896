"""The capacity sweep's knee and its curves (gates/performance/capacity.py), on hand-made sweep points."""

from __future__ import annotations

import math

from gatekeeper.gates.performance.capacity import SweepPoint, knee, sweep_curve
from gatekeeper.perf.figures import Slo

SLO = Slo(ttft_s=0.5, tpot_s=0.05)


def point(level: int, ttft: float, tpot: float = 0.01, errors: float = 0.0) -> SweepPoint:
    return SweepPoint(level, {"requests_per_s": float(level), "ttft_p95_s": ttft, "tpot_p95_s": tpot, "error_rate": errors,
                              "output_tokens_per_s": 100.0 * level, "goodput_rps": float(level)})


def test_knee_is_the_highest_level_meeting_the_slos() -> None:
    points = [point(1, 0.1), point(2, 0.2), point(4, 0.4), point(8, 0.9)]
    found = knee(points, SLO)
    assert found is not None and found.level == 4


def test_a_level_that_passes_above_a_miss_is_not_the_knee() -> None:
    # the baseline missed its TTFT target at 2; 4 passing after it is luck, not capacity
    points = [point(1, 0.1), point(2, 0.7), point(4, 0.3)]
    found = knee(points, SLO)
    assert found is not None and found.level == 1
    assert knee([point(4, 0.3), point(2, 0.7), point(1, 0.1)], SLO).level == 1  # type: ignore[union-attr]  # order-free


def test_no_knee_when_the_lowest_level_misses_or_fails_requests() -> None:
    assert knee([point(1, 0.9), point(2, 0.1)], SLO) is None
    assert knee([point(1, 0.1, errors=0.1), point(2, 0.1)], SLO) is None
    assert knee([], SLO) is None


def test_sweep_curve_draws_the_slo_near_the_figures_and_names_it_otherwise() -> None:
    near = {"baseline": [point(1, 0.2), point(4, 0.4)], "candidate": [point(1, 0.25), point(4, 0.45)]}
    curve = sweep_curve("TTFT p95", near, "ttft_p95_s", "ms", 1000.0, SLO.ttft_s)
    assert curve.is_key and curve.x == (1, 4)
    assert curve.series["baseline"] == (200.0, 400.0) and curve.series["SLO 500 ms"] == (500.0, 500.0)
    far = {side: [point(1, 0.01), point(4, 0.02)] for side in ("baseline", "candidate")}
    curve = sweep_curve("TTFT p95", far, "ttft_p95_s", "ms", 1000.0, 1.0)
    assert set(curve.series) == {"baseline", "candidate"} and "SLO 1000 ms, off this scale" in curve.title
    missing = {side: [SweepPoint(1, {"ttft_p95_s": None})] for side in ("baseline", "candidate")}
    assert math.isnan(sweep_curve("t", missing, "ttft_p95_s", "ms", 1000.0).series["baseline"][0])
