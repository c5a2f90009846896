"""A settled measurement (a side was busy after answering): the sides take turns block by block,
each block waiting for the other side's processes to go quiet — against two real streaming
servers (benchmarks/fast_server.py) whose CPU clocks are read as a launched target's are."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

from gatekeeper.endpoints.client import Endpoint
from gatekeeper.gates.interface import GateContext
from gatekeeper.gates.performance import checks
from gatekeeper.perf.measure import SIDES, client_bound, measure_level, unquiet, warm_up
from gatekeeper.gates.performance.measurement_check import measurement_check
from gatekeeper.gates.performance.settings import PerformanceSettings
from gatekeeper.perf.quiet import MOST_S
from gatekeeper.results import Status
from gatekeeper.perf.compare import log_ratios
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


def test_blocks_sent_beside_a_side_that_never_went_quiet_are_left_out() -> None:
    """The candidate's processes include one that spins for ever (a worker that never stops
    polling): each baseline block is sent after the wait gives up, so its pair shares the cores
    and is not compared; with most pairs so, the measurement WARNs and nothing is judged."""
    workload = Workload((8, 16), (6, 6))
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        with served() as base, served() as cand:
            busy = replace(cand, cpu=CpuMeter.of_process(spinner.pid))
            blocks = measure_level({"baseline": base, "candidate": busy}, 1, 2, 3, workload, 7, Slo(), lambda _: None,
                                   settle=True)
    finally:
        stop(spinner)
    loud = [w for w in blocks.waits if not w.quiet]
    assert loud and all(w.seconds >= MOST_S for w in loud)  # the baseline's blocks waited for the spinning candidate
    flagged = [unquiet(f) for f in blocks.figures["baseline"]]
    assert sum(flagged) == len(loud) and not any(unquiet(f) for f in blocks.figures["candidate"])
    for i, left in enumerate(flagged):  # a block sent beside the busy side is left out, its pair with it
        assert (blocks.series("baseline", "e2e_s_per_token")[i] is None) == (left or client_bound(blocks.figures["baseline"][i]))
    assert len(log_ratios(blocks.series("candidate", "e2e_s_per_token"), blocks.series("baseline", "e2e_s_per_token"))) <= 2 - sum(flagged)
    ep = Endpoint("reference", "http://127.0.0.1:9", "m")  # never asked: the check judges recorded blocks
    ctx = GateContext(gate_id="performance", reference=ep, candidate=ep, settings=PerformanceSettings(), blocking_rule=lambda c: True,
                      capabilities={}, record=lambda r: None)
    valid, why = measurement_check(ctx, [blocks], "the reference", workload)
    check = ctx.checks[-1]
    unquiet_pairs = sum(1 for a, b in zip(blocks.figures["baseline"], blocks.figures["candidate"])
                        if unquiet(a) and not (client_bound(a) or client_bound(b)))
    assert check.metrics["unquiet_pairs"] == unquiet_pairs
    if unquiet_pairs == 2:  # every pair shared the cores (the usual case): nothing is judged
        assert (valid, why) == (False, "the other side never went quiet")
        assert check.id == checks.MEASUREMENT and check.status is Status.WARN, check.reason
