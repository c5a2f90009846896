"""The `decode-slowdown` fault costs what it says of the server's CPU: with `decode-slowdown=5`,
the engine's spins (its `/metrics` counter) are 5% ± 0.5 of the rest of the CPU time the server
process spent, request by request at concurrency 1 on the shipped gk-tiny, measured from outside in
the process's threads' scheduler statistics (every thread: prefill, decode, the event loop, the
`/metrics` reads). That is the figure the performance gate decides on for a launched CPU engine
(CPU seconds per output token, prefill included). Both come from the same requests, so the
machine's noise divides out. What it costs against a clean server, interleaved over fresh
launches, is `benchmarks/perf_noise.py --fault decode-slowdown=5`'s to measure."""

from __future__ import annotations

import re
import httpx
import pytest

from gatekeeper.perf.cpu import process_cpu_ns
from gatekeeper.perf.loadgen import LoadProfile, LoadRequest, LoadTarget, run_load
from gatekeeper.perf.workload import Workload
from paths import GK_TINY
from server_util import ServerProcess, running_server

pytest.importorskip("torch")


def _spin_seconds(url: str) -> float:
    text = httpx.get(url + "/metrics").text
    found = re.search(r"^gatekeeper:decode_slowdown_seconds_total\{[^}]*\} ([0-9.e+-]+)$", text, re.M)
    assert found, "the slowed engine exports its spin"
    return float(found.group(1))


def _measured(server: ServerProcess, target: LoadTarget, request: LoadRequest) -> tuple[float, float, int]:
    """One request alone: the engine's spin, the server's CPU seconds (the /metrics reads around
    it included, as in every other measurement) and the tokens answered."""
    spin, cpu = _spin_seconds(server.url), process_cpu_ns(server.proc.pid)
    [record] = run_load(target, [request], LoadProfile("synchronous")).measured
    spin, cpu = _spin_seconds(server.url) - spin, process_cpu_ns(server.proc.pid) - cpu
    return spin, cpu / 1e9, record.output_tokens if record.ok else 0


@pytest.mark.parametrize("pct", [5, 23])
def test_decode_slowdown_costs_its_share_of_the_server_cpu(pct: int):
    with running_server(GK_TINY, "--fault", f"decode-slowdown={pct}", "--no-prefix-caching") as server:
        model = httpx.get(server.url + "/v1/models").json()["data"][0]["id"]
        target = LoadTarget(server.url, model)
        requests = Workload((48, 160), (32, 32), True).requests(24, 7)
        run_load(target, requests[:4], LoadProfile("synchronous"))  # warm-up
        spin = cpu = 0.0
        tokens = 0
        for request in requests:
            spun, used, answered = _measured(server, target, request)
            spin, cpu, tokens = spin + spun, cpu + used, tokens + answered
    assert tokens >= len(requests) * 16, "the requests were answered"
    realised = spin / (cpu - spin)
    assert realised == pytest.approx(pct / 100, rel=0.1 if pct == 5 else 0.05), realised
