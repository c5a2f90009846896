"""`burst_share`: which chunk gaps are bursts (chunks arriving together after a stall)."""

from __future__ import annotations

from gatekeeper.perf.figures import burst_share
from gatekeeper.perf.loadgen import RequestRecord


def record(chunks: list[float], error: str | None = None) -> RequestRecord:
    return RequestRecord(0, 0.0, 0.0, (chunks[-1] if chunks else 0.0) + 0.001, tuple(chunks), len(chunks), 10, True, error)


def steady(n: int = 32, step: float = 0.003, start: float = 0.02) -> list[float]:
    return [start + i * step for i in range(n)]


def test_a_steady_stream_has_no_bursts() -> None:
    assert burst_share([record(steady()), record(steady(step=0.004))]) == 0.0


def test_chunks_arriving_together_after_a_stall_are_bursts() -> None:
    stalled = steady(16) + [steady(16)[-1] + 0.03 + i * 0.00002 for i in range(5)] + steady(11, start=0.1)
    share = burst_share([record(stalled), record(steady())])
    assert share is not None
    # the five chunks after the stall arrive 20 µs apart: four gaps of the 31 + 31 are bursts
    assert share == 4 / 62


def test_short_streams_and_failed_requests_say_nothing() -> None:
    assert burst_share([record([0.01, 0.02]), record(steady(), error="HTTP 500")]) is None
    assert burst_share([]) is None
