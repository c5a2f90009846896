"""A client that goes away has its sequence aborted and its KV blocks freed; after any load the
block manager is back to all blocks free (read through /metrics, as a gate would)."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from server_util import running_server

SETTLE_DEADLINE_S = 60.0  # liveness bound for the engine to go idle, not a timing assertion
LONG = {"prompt": "The quick brown fox", "max_tokens": 480, "ignore_eos": True, "temperature": 0}


@pytest.fixture(scope="module")
def server(tiny_model_dir):
    # decode-slowdown keeps a long generation running while the test disconnects from it
    with running_server(tiny_model_dir, "--fault", "decode-slowdown=400") as s:
        yield s


def metrics(server) -> dict[str, float]:
    out = {}
    for line in httpx.get(server.url + "/metrics").text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            key = name.split("{")[0] + ('{abort}' if 'finished_reason="abort"' in name else "")
            out[key] = float(value)
    return out


def wait_idle(server) -> dict[str, float]:
    deadline = time.monotonic() + SETTLE_DEADLINE_S
    while True:
        m = metrics(server)
        if m["vllm:num_requests_running"] == 0 and m["vllm:num_requests_waiting"] == 0:
            return m
        assert time.monotonic() < deadline, m
        time.sleep(0.05)


def read_some_chunks(server, path: str, body: dict, n: int) -> int:
    """Open a stream, read `n` data events, then drop the connection."""
    seen = 0
    with httpx.Client(timeout=60) as client, client.stream("POST", server.v1 + path, json={**body, "stream": True}) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if line.startswith("data: "):
                seen += 1
                if seen >= n:
                    break
    return seen


def test_disconnect_mid_stream_aborts_and_frees_blocks(server):
    before = wait_idle(server)
    assert read_some_chunks(server, "/completions", LONG, 3) == 3
    after = wait_idle(server)
    assert after["gatekeeper:num_blocks_free"] == after["gatekeeper:num_blocks_total"]
    assert after.get("vllm:request_success_total{abort}", 0) > before.get("vllm:request_success_total{abort}", 0)
    generated = after["vllm:generation_tokens_total"] - before["vllm:generation_tokens_total"]
    assert generated < LONG["max_tokens"]


def test_disconnect_of_chat_stream(server):
    body = {"messages": [{"role": "user", "content": "count"}], "max_tokens": 400, "ignore_eos": True}
    assert read_some_chunks(server, "/chat/completions", body, 4) == 4
    m = wait_idle(server)
    assert m["gatekeeper:num_blocks_free"] == m["gatekeeper:num_blocks_total"]


def test_non_streaming_client_timeout_aborts(server):
    before = wait_idle(server)
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(server.v1 + "/completions", json=LONG, timeout=httpx.Timeout(60, read=0.5))
    after = wait_idle(server)
    assert after["gatekeeper:num_blocks_free"] == after["gatekeeper:num_blocks_total"]
    assert after["vllm:generation_tokens_total"] - before["vllm:generation_tokens_total"] < LONG["max_tokens"]


def test_mixed_concurrent_load_leaves_all_blocks_free(server):
    def finish(i: int) -> int:
        r = httpx.post(server.v1 + "/completions", timeout=120,
                       json={"prompt": f"request {i} " * (i + 1), "max_tokens": 8, "temperature": 0})
        return r.status_code

    def abandon(i: int) -> int:
        return read_some_chunks(server, "/completions", {**LONG, "prompt": f"stream {i}"}, 2)

    with ThreadPoolExecutor(max_workers=12) as pool:
        done = list(pool.map(finish, range(8)))
        dropped = list(pool.map(abandon, range(4)))
    assert done == [200] * 8 and dropped == [2] * 4
    m = wait_idle(server)
    assert m["gatekeeper:num_blocks_free"] == m["gatekeeper:num_blocks_total"]
    assert m["vllm:kv_cache_usage_perc"] == 0
