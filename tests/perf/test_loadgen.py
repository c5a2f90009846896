"""The load generator against real loopback servers: benchmarks/fast_server.py (a cheap scripted
OpenAI streaming server whose per-request fields inject delays and faults) for the mechanics, and
the bundled engine for the real thing. Timing bands here check definitions (which interval is
divided by what), never speed."""

from __future__ import annotations

import statistics
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

from gatekeeper.perf.figures import Slo, block_figures
from gatekeeper.perf.loadgen import MAX_LATENESS_S, LoadProfile, LoadRequest, LoadTarget, _schedule, run_alternating, run_load
from server_util import free_port, running_server, stop
from paths import ROOT

FAST_SERVER = ROOT / "benchmarks" / "fast_server.py"
GK_TINY = ROOT / "gatekeeper" / "models" / "gk-tiny"


@contextmanager
def fast_server(*args: str) -> Iterator[str]:
    """benchmarks/fast_server.py on a port the OS picks; yields its base URL."""
    proc = subprocess.Popen([sys.executable, str(FAST_SERVER), "--port", "0", *args], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("listening on "), line
        yield line.split()[-1]
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def fast() -> Iterator[LoadTarget]:
    with fast_server() as url:
        yield LoadTarget(url, "fast")


def completion(max_tokens: int = 4, **extra: object) -> LoadRequest:
    """A completions request; `extra` holds fast_server's x_* switches."""
    return LoadRequest({"prompt": "one two three", "max_tokens": max_tokens, **extra})


PROFILES = [LoadProfile("synchronous"), LoadProfile("concurrent", concurrency=4),
            LoadProfile("rate", concurrency=3, rate=400.0), LoadProfile("poisson", concurrency=0, rate=400.0, seed=3)]


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.describe())
def test_every_profile_answers_every_request_in_order(fast: LoadTarget, profile: LoadProfile) -> None:
    requests = [completion(1 + i % 5) if i % 3 else LoadRequest({"messages": [{"role": "user", "content": "hi"}],
                                                                  "max_tokens": 1 + i % 5}, "chat") for i in range(24)]
    result = run_load(fast, requests, profile)
    assert [r.index for r in result.records] == list(range(24))
    assert all(r.ok and r.usage_reported for r in result.records), [r.error for r in result.records]
    assert [r.output_tokens for r in result.records] == [1 + i % 5 for i in range(24)]  # record i is request i's answer
    assert [len(r.chunk_s) for r in result.records] == [1 + i % 5 for i in range(24)]
    assert all(r.scheduled_s <= r.sent_s <= r.end_s for r in result.records)  # never sent before its time
    assert result.started_s <= min(r.sent_s for r in result.records) and max(r.end_s for r in result.records) <= result.ended_s
    if profile.kind in ("rate", "poisson"):
        assert [r.scheduled_s for r in result.records] == _schedule(profile, 24, result.started_s)


def test_warm_up_records_are_flagged_and_left_out_of_the_measured_ones(fast: LoadTarget) -> None:
    result = run_load(fast, [completion()] * 10, LoadProfile("concurrent", concurrency=2, warmup=3))
    assert [r.warmup for r in result.records] == [True] * 3 + [False] * 7
    assert [r.index for r in result.measured] == list(range(3, 10))


def test_each_stream_keeps_its_connection_for_the_next_request() -> None:
    with fast_server() as url:
        result = run_load(LoadTarget(url, "fast"), [completion()] * 30, LoadProfile("concurrent", concurrency=3))
        stats = httpx.get(url + "/stats").json()
    assert all(r.ok for r in result.records)
    assert stats == {"connections": 3 + 1, "requests": 30 + 1}  # one per stream, and this GET's


def test_alternating_sides_take_turns_one_request_at_a_time_each_on_its_own_connection() -> None:
    with fast_server() as a, fast_server() as b:
        requests = [completion(1 + i) for i in range(6)]
        results = run_alternating({"a": LoadTarget(a, "fast"), "b": LoadTarget(b, "fast")}, requests, ["a", "b"])
        stats = [httpx.get(u + "/stats").json() for u in (a, b)]
    assert stats == [{"connections": 1 + 1, "requests": 6 + 1}] * 2  # one kept-alive connection each, and the GET's
    assert [r.index for r in results["a"].records] == list(range(6)) == [r.index for r in results["b"].records]
    sent = sorted((r.sent_s, side, r.index) for side, res in results.items() for r in res.records)
    assert [(side, i) for _, side, i in sent] == [("a", 0), ("b", 0), ("b", 1), ("a", 1), ("a", 2), ("b", 2),
                                                  ("b", 3), ("a", 3), ("a", 4), ("b", 4), ("b", 5), ("a", 5)]
    ends = [(r.sent_s, r.end_s) for _, res in results.items() for r in res.records]
    assert all(e1 <= s2 or e2 <= s1 for (s1, e1) in ends for (s2, e2) in ends if (s1, e1) != (s2, e2))  # never two at once


def test_a_synchronous_block_s_throughput_counts_its_own_busy_time_only(fast: LoadTarget) -> None:
    """Interleaved with another target's requests, a side's wall time is the sum of its own E2E."""
    with fast_server() as other:
        res = run_alternating({"a": fast, "b": LoadTarget(other, "fast")}, [completion(4)] * 5, ["a", "b"])["a"]
    figures = block_figures(res, Slo())
    busy = sum(r.e2e_s for r in res.records)
    assert figures["wall_s"] == pytest.approx(busy) and busy < res.ended_s - res.started_s
    assert figures["output_tokens_per_s"] == pytest.approx(sum(r.output_tokens for r in res.records) / busy)


def test_the_server_s_usage_is_the_token_count_else_the_chunks_are_counted(fast: LoadTarget) -> None:
    reported, counted = run_load(fast, [completion(5, x_tokens_per_chunk=2), completion(5, x_tokens_per_chunk=2, x_usage=False)],
                                 LoadProfile("synchronous")).records
    assert (reported.output_tokens, reported.usage_reported, reported.prompt_tokens) == (10, True, 3)
    assert (counted.output_tokens, counted.usage_reported, counted.prompt_tokens) == (5, False, None)
    assert reported.ok and counted.ok and len(reported.chunk_s) == len(counted.chunk_s) == 5


def test_a_server_without_usage_or_done_still_gives_complete_records() -> None:
    with fast_server("--no-usage", "--no-done") as url:
        records = run_load(LoadTarget(url, "fast"), [completion(3)] * 4, LoadProfile("concurrent", concurrency=2)).records
    assert all(r.ok and r.error is None and r.output_tokens == 3 and not r.usage_reported for r in records)


def test_a_stream_that_ends_without_done_is_complete(fast: LoadTarget) -> None:
    (record,) = run_load(fast, [completion(4, x_done=False)], LoadProfile("synchronous")).records
    assert record.ok and record.output_tokens == 4 and record.usage_reported


def test_error_answers_and_cut_connections_are_records_not_exceptions(fast: LoadTarget) -> None:
    requests = [completion(), completion(x_fault="400"), completion(x_fault="500"), completion(x_fault="drop"),
                completion(x_fault="garbage"), completion()]
    ok, bad, broken, dropped, garbage, after = run_load(fast, requests, LoadProfile("synchronous")).records
    assert ok.ok and after.ok  # the connection is usable after an error answer and replaced after a cut
    assert bad.error is not None and bad.error.startswith("HTTP 400") and "injected fault" in bad.error and not bad.ok
    assert broken.error is not None and broken.error.startswith("HTTP 500") and not broken.ok
    assert dropped.error is not None and not dropped.ok and not dropped.usage_reported
    assert len(dropped.chunk_s) == 2  # what arrived before the cut is kept
    assert garbage.error is not None and "SSE event is not JSON" in garbage.error and not garbage.ok  # the one SSE parser classifies it


def test_a_refused_connection_is_a_record_per_request() -> None:
    records = run_load(LoadTarget(f"http://127.0.0.1:{free_port()}", "m", timeout_s=5), [completion()] * 3,
                       LoadProfile("rate", concurrency=2, rate=100.0)).records
    assert [r.index for r in records] == [0, 1, 2]
    assert all(r.error and "Connect" in r.error and not r.ok for r in records)


def test_tpot_excludes_the_first_token_and_the_guidellm_variant_includes_it(fast: LoadTarget) -> None:
    # The server waits 150 ms before the first chunk and 20 ms before each of the 5 others.
    records = run_load(fast, [completion(6, x_ttft_ms=150, x_delay_ms=20)] * 3, LoadProfile("synchronous")).records
    for r in records:
        assert r.ok and r.output_tokens == 6 and r.ttft_s is not None and r.tpot_s is not None
        assert r.ttft_s >= 0.145  # the first pause is in TTFT (a lower bound: the server sleeps that long)
        assert 0.015 <= r.tpot_s <= 0.060  # vLLM's: (e2e - ttft) / 5, the 20 ms decode steps
        assert r.tpot_s == pytest.approx((r.e2e_s - r.ttft_s) / 5)
        assert r.tpot_incl_first_s == pytest.approx(r.e2e_s / 6)  # guidellm's: TTFT spread over all 6
        assert r.tpot_incl_first_s > r.tpot_s
        assert len(r.itl_s) == 5 and 0.015 <= statistics.median(r.itl_s) <= 0.060


def test_poisson_schedules_are_seeded_with_mean_gap_one_over_the_rate() -> None:
    profile = LoadProfile("poisson", rate=50.0, seed=7)
    times = _schedule(profile, 5000, 10.0)
    assert times == _schedule(profile, 5000, 10.0)
    assert times != _schedule(LoadProfile("poisson", rate=50.0, seed=8), 5000, 10.0)
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert times[0] == 10.0 and all(g >= 0 for g in gaps)
    assert statistics.mean(gaps) == pytest.approx(1 / 50.0, rel=0.05)  # 5,000 gaps: the mean's sd is 1.4%
    assert statistics.stdev(gaps) == pytest.approx(1 / 50.0, rel=0.1)  # exponential: sd = mean
    assert _schedule(LoadProfile("rate", rate=4.0), 3, 1.0) == [1.0, 1.25, 1.5]
    assert _schedule(LoadProfile("concurrent", concurrency=2), 2, 1.0) == [1.0, 1.0]


def test_a_schedule_the_client_cannot_keep_is_client_bound(fast: LoadTarget) -> None:
    # 500 requests due within 0.5 ms, no cap: whatever the machine, issuing them takes far longer
    # than MAX_LATENESS_S, so the late ones are the client's doing and the run is marked invalid.
    result = run_load(fast, [completion(2)] * 500, LoadProfile("rate", concurrency=0, rate=1e6))
    assert all(r.ok for r in result.records)
    assert result.lateness_p99_s > MAX_LATENESS_S and result.client_bound


def test_waiting_for_a_slot_under_the_cap_is_not_lateness(fast: LoadTarget) -> None:
    # 12 requests due at once, 2 slots, 100 ms answers: most wait ~100-500 ms for a slot, the
    # server's doing; their lateness only counts the client's own delay once a slot was free.
    result = run_load(fast, [completion(2, x_delay_ms=50)] * 12, LoadProfile("rate", concurrency=2, rate=1e6, warmup=2))
    # Summed over the requests, not the worst one: on a machine busy with other work one wake-up
    # of the event loop can come a few hundred ms late (seen once: 0.36 s, the client's real
    # delay), while counting the slot waits as lateness would make the sums equal.
    waits = [r.sent_s - r.scheduled_s for r in result.measured]
    assert max(waits) >= 0.4  # really waited: 5 rounds of ~100 ms before the last pair
    assert sum(r.lateness_s for r in result.measured) < sum(waits) / 4


def test_the_bundled_engine_under_concurrent_load_reports_usage() -> None:
    pytest.importorskip("torch", reason="the bundled engine needs the `engine` extra")
    with running_server(GK_TINY, "--profile", "optimized") as server:
        target = LoadTarget(server.url, httpx.get(server.url + "/v1/models").json()["data"][0]["id"])
        requests = [LoadRequest({"prompt": f"Count to {i}:", "max_tokens": 8, "ignore_eos": True}) for i in range(6)]
        requests += [LoadRequest({"messages": [{"role": "user", "content": "Say hi"}], "max_tokens": 6, "ignore_eos": True}, "chat")]
        result = run_load(target, requests, LoadProfile("concurrent", concurrency=3, warmup=1))
    assert [r.index for r in result.records] == list(range(7))
    assert all(r.ok and r.usage_reported for r in result.records), [r.error for r in result.records]
    assert all(r.output_tokens == 8 for r in result.records[:6])
    assert all(r.prompt_tokens and r.ttft_s is not None for r in result.records)
    assert len(result.measured) == 6


def test_a_request_lost_on_a_kept_alive_connection_is_sent_again_fresh_and_marked() -> None:
    """The kept-alive race (a real proxy that loses 30% of the requests sent on reused connections):
    the load generator sends each lost request once more on a new connection, marks its record
    `reconnected`, and the server sees every request exactly once."""
    from keepalive_proxy import keepalive_proxy

    with fast_server() as url, keepalive_proxy(url, rate=0.3, seed=5) as proxy:
        result = run_load(LoadTarget(proxy.url, "fast"), [completion()] * 40, LoadProfile("concurrent", concurrency=3))
        served = httpx.get(url + "/stats").json()["requests"]
    assert proxy.dropped >= 3 and proxy.reused >= 20  # the connections were kept alive, and some requests were lost
    assert all(r.ok for r in result.records), [r.error for r in result.records]
    assert sum(r.reconnected for r in result.records) == proxy.dropped  # each loss re-sent once, and marked
    assert proxy.relayed == 40 and served == 40 + 1  # the server saw each request once (and the GET for its count)
