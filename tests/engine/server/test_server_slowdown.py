"""The `decode-slowdown` fault costs what it says of the decode CPU time: with `decode-slowdown=5`,
the engine's spins (its `/metrics` counter) are 5% ± 0.5 of the rest of the CPU time the server
process spent decoding, request by request at concurrency 1 on the shipped gk-tiny. The decode
CPU is measured from outside, in the process's threads' scheduler statistics: a request's CPU
less that of the same prompt asked for one token (its prefill, parsing and framing; no prefix
cache, so both prefill alike). Both figures come from the same requests, so the machine's noise
divides out: what is tested is the switch's definition (the CPU of every thread that works per token — the engine's and the event loop's
that delivers them — not only the engine thread's wall time, which cost ~3.4% of CPU per token)."""

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
def test_decode_slowdown_costs_its_share_of_the_decode_cpu(pct: int):
    with running_server(GK_TINY, "--fault", f"decode-slowdown={pct}", "--no-prefix-caching") as server:
        model = httpx.get(server.url + "/v1/models").json()["data"][0]["id"]
        target = LoadTarget(server.url, model)
        requests = Workload((48, 160), (32, 32), True).requests(24, 7)
        run_load(target, requests[:4], LoadProfile("synchronous"))  # warm-up
        spin = decode_cpu = 0.0
        for request in requests:
            spun, cpu, tokens = _measured(server, target, request)
            _, prefill_cpu, first = _measured(server, target, LoadRequest({**request.body, "max_tokens": 1}, request.endpoint))
            if tokens > 1 and first == 1:
                spin += spun
                decode_cpu += cpu - prefill_cpu
    assert decode_cpu > 0
    realised = spin / (decode_cpu - spin)
    assert realised == pytest.approx(pct / 100, rel=0.1 if pct == 5 else 0.05), realised
