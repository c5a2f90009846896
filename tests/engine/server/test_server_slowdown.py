"""The `decode-slowdown` fault costs what it says of decode time: with `decode-slowdown=5`, the
engine's spins (its `/metrics` counter) are 5% ± 0.5 of the rest of the decode time a client
measures (its E2E less its TTFT, the interval the performance gate's primary figure sums), request
by request at concurrency 1 on the shipped gk-tiny. Both come from the same requests, so a quiet
machine's noise divides out; a busy one's does not (two spinning processes beside it: 0.55 read
for 23%), as the client then reads the chunks late and in bunches, so the test runs alone
(`serial`). The switch's arithmetic is `tests/engine/test_engine_faults.py`'s, on a scripted
clock. What it costs against a clean server, interleaved over fresh launches, is
`benchmarks/perf_sequential.py`'s and `benchmarks/perf_noise.py --fault decode-slowdown=5`'s to
measure."""

from __future__ import annotations

import re
import httpx
import pytest

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


def _measured(server: ServerProcess, target: LoadTarget, request: LoadRequest) -> tuple[float, float | None]:
    """One request alone: the engine's spin and the decode time the client saw (E2E less TTFT;
    None when no two chunks carried text: gk-tiny, told to ignore its end of turn, sometimes
    answers only special tokens, which the stream leaves out)."""
    spin = _spin_seconds(server.url)
    [record] = run_load(target, [request], LoadProfile("synchronous")).measured
    assert record.ok and record.output_tokens == request.body["max_tokens"], record
    seen = record.e2e_s - record.ttft_s if record.ttft_s is not None and len(record.chunk_s) > 1 else None
    return _spin_seconds(server.url) - spin, seen


@pytest.mark.slow
@pytest.mark.serial  # measures wall time as a client sees it: under load the client reads chunks late and in bunches
@pytest.mark.parametrize("pct", [5, 23])
def test_decode_slowdown_costs_its_share_of_the_decode_time(pct: int):
    with running_server(GK_TINY, "--fault", f"decode-slowdown={pct}", "--no-prefix-caching") as server:
        model = httpx.get(server.url + "/v1/models").json()["data"][0]["id"]
        target = LoadTarget(server.url, model)
        requests = Workload((48, 160), (32, 32), True).requests(24, 7)
        run_load(target, requests[:4], LoadProfile("synchronous"))  # warm-up
        spin = decode = 0.0
        seen = 0
        for request in requests:
            spun, seconds = _measured(server, target, request)
            if seconds is not None:
                spin, decode, seen = spin + spun, decode + seconds, seen + 1
    assert seen >= len(requests) // 2, f"only {seen} of {len(requests)} answers streamed text"
    realised = spin / (decode - spin)
    assert realised == pytest.approx(pct / 100, rel=0.1 if pct == 5 else 0.05), realised
