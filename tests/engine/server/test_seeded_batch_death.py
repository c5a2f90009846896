"""The `seeded-batch-dies` fault through the real server: a seeded, sampled request served alone is
answered, the same request prefilled beside another kills the engine core (as vLLM 0.31/0.32's CPU
engine dies: "CPU Generator does not use offset"), and from then on every request fails and /health
answers 503, with the root cause in the server's log."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

pytest.importorskip("torch")

from server_util import running_server  # noqa: E402


def _chat(url: str, seed: int | None, temperature: float) -> httpx.Response:
    model = httpx.get(url + "/v1/models", timeout=10).json()["data"][0]["id"]
    body = {"model": model, "messages": [{"role": "user", "content": "Write a few words about rivers."}],
            "max_tokens": 8, "temperature": temperature, **({"seed": seed} if seed is not None else {})}
    return httpx.post(url + "/v1/chat/completions", json=body, timeout=60)


def test_a_seeded_sampled_request_batched_with_another_kills_the_engine(tiny_model_dir):
    with running_server(tiny_model_dir, "--profile", "optimized", "--fault", "seeded-batch-dies") as server:
        alone = [_chat(server.url, 7, 1.0) for _ in range(2)]
        assert [r.status_code for r in alone] == [200, 200], [r.text for r in alone]
        assert alone[0].json()["choices"][0]["message"] == alone[1].json()["choices"][0]["message"]  # the seed fixes it
        assert _chat(server.url, None, 1.0).status_code == 200  # unseeded: no generator of its own
        for _ in range(20):  # until a prefill step holds both (they arrive together, almost always at once)
            with ThreadPoolExecutor(4) as pool:
                codes = [f.result().status_code for f in [pool.submit(_chat, server.url, s, 1.0) for s in (1, 2, 3, 4)]]
            if any(c >= 500 for c in codes):
                break
        assert any(c >= 500 for c in codes), codes
        assert httpx.get(server.url + "/health", timeout=10).status_code == 503
        assert _chat(server.url, None, 0.0).status_code == 503  # a greedy request alone: the engine is dead
        log = server.log()
        assert "EngineCoreError: CPU Generator does not use offset" in log and "engine loop died" in log, log[-2000:]
