"""A settled measurement (a side was busy after answering): the sides take turns block by block,
each block waiting for the other side's processes to go quiet — against two real streaming
servers (benchmarks/fast_server.py) whose CPU clocks are read as a launched target's are."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from gatekeeper.gates.performance.measure import SIDES, measure_level, warm_up
from gatekeeper.perf.cpu import CpuMeter
from gatekeeper.perf.figures import Slo
from gatekeeper.perf.loadgen import LoadTarget
from gatekeeper.perf.workload import Workload
from paths import ROOT
from server_util import stop


@contextmanager
def served() -> Iterator[LoadTarget]:
    proc = subprocess.Popen([sys.executable, str(ROOT / "benchmarks" / "fast_server.py"), "--port", "0",
                             "--delay-ms", "2"], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("listening on "), line
        yield LoadTarget(line.split()[-1], "fast", cpu=CpuMeter.of_process(proc.pid))
    finally:
        stop(proc)


def test_settled_pairs_are_measured_block_by_block_with_a_wait_before_each() -> None:
    workload = Workload((8, 16), (6, 6))
    with served() as base, served() as cand:
        targets = {"baseline": base, "candidate": cand}
        warm = warm_up(targets, workload.requests(4, 1))
        assert warm.after["baseline"] is not None and not warm.settle  # a server that sleeps between requests
        blocks = measure_level(targets, 1, 4, 3, workload, 7, Slo(), lambda _: None, settle=True)
    assert len(blocks.waits) == 2 * 4  # one per block: each side's block waits for the other side
    assert all(w.quiet for w in blocks.waits)
    for side in SIDES:
        assert [f["requests"] for f in blocks.figures[side]] == [3.0] * 4
    base, cand = blocks.results["baseline"][0], blocks.results["candidate"][0]  # pair 0: the baseline's block first
    assert base.records[-1].end_s <= cand.records[0].sent_s  # a whole block, then the other's


def test_unsettled_pairs_take_turns_request_by_request() -> None:
    workload = Workload((8, 16), (6, 6))
    with served() as base, served() as cand:
        blocks = measure_level({"baseline": base, "candidate": cand}, 1, 2, 3, workload, 7, Slo(), lambda _: None)
    assert blocks.waits == []
    base, cand = blocks.results["baseline"][0], blocks.results["candidate"][0]
    assert cand.records[0].sent_s < base.records[1].sent_s  # request by request: A B, B A, ...
