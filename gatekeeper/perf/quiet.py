"""Whether a launched server goes quiet after it answers, and waiting until it has.

Two servers measured in turn on one machine share its cores. A server that keeps working after
its last answer takes a core from the other side's measurement: vLLM's CPU worker busy-polls its
shared-memory queue for a second after each step (`SpinCondition`, `busy_loop_s=1` in
`vllm/distributed/device_communicators/shm_broadcast.py`) before it parks. Taking turns request by
request then measures each side with the other spinning beside it: two vLLM 0.31.0 launches of
one build differed by sd 0.43–0.45 in log E2E per block pair that way, 0.18 when each block
waited for the other side to go quiet (40 pairs each, this 2-core VM).

Both readings come from the servers' own CPU clocks (`perf/cpu.py`), so only targets launched
here can be watched; a URL target is never waited for.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from gatekeeper.perf.cpu import CpuMeter

QUIET_CORES = 0.10  # below a tenth of a core: quiet
AFTER_S = 0.2  # how long after an answer a server is watched
WINDOW_S = 0.05  # one reading while waiting
MOST_S = 5.0  # the longest wait before a block is sent anyway


def cores_used(meters: Sequence[CpuMeter], seconds: float) -> float:
    """The cores `meters`' processes kept busy together over the next `seconds`."""
    before = sum(m.seconds() for m in meters)
    time.sleep(seconds)
    return (sum(m.seconds() for m in meters) - before) / seconds


@dataclass(frozen=True)
class Wait:
    """One wait for quiet: how long it took and whether it ended quiet (False: gave up at `MOST_S`)."""

    seconds: float
    quiet: bool


def wait_quiet(meters: Sequence[CpuMeter], most_s: float = MOST_S) -> Wait:
    """Wait until `meters`' processes use under `QUIET_CORES` over a `WINDOW_S` reading, at most
    `most_s`; no meters: no wait."""
    if not meters:
        return Wait(0.0, True)
    start = time.perf_counter()
    while True:
        quiet = cores_used(meters, WINDOW_S) < QUIET_CORES
        waited = time.perf_counter() - start
        if quiet or waited >= most_s:
            return Wait(waited, quiet)
