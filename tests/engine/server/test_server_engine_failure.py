"""What the server answers when the engine itself fails: a step that fails only its own requests
is a 500 and the server serves on; a dead engine loop is a 503 on every request and on /health.

No fault switch makes the engine's step raise, so this one test runs the real app and the real
engine in process and makes `core.step` raise (the only stand-in in the server tests)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from fastapi.testclient import TestClient

from gatekeeper.engine.async_engine import AsyncEngine
from gatekeeper.engine.engine_args import EngineArgs
from gatekeeper.engine.server.app import build_app

BODY = {"model": "tiny", "messages": [{"role": "user", "content": "Reply with exactly: OK"}], "max_tokens": 4}


def _raise_once(engine: AsyncEngine, exc: BaseException) -> None:
    real = engine.core.step

    def step():
        engine.core.step = real
        raise exc

    engine.core.step = step


def test_failed_step_is_500_then_serving_goes_on_and_a_dead_loop_is_503(tiny_model_dir):
    engine = AsyncEngine.from_args(EngineArgs(model=str(tiny_model_dir), served_model_name="tiny"))
    with TestClient(build_app(engine)) as client:
        assert client.post("/v1/chat/completions", json=BODY).status_code == 200

        _raise_once(engine, RuntimeError("illegal memory access in a kernel"))
        r = client.post("/v1/chat/completions", json=BODY)
        assert r.status_code == 500, r.text
        err = r.json()["error"]
        assert err["type"] == "InternalServerError" and "illegal memory access" in err["message"]
        assert client.get("/health").status_code == 200
        assert client.post("/v1/chat/completions", json=BODY).status_code == 200

        _raise_once(engine, KeyboardInterrupt())  # not an Exception: the loop itself dies
        r = client.post("/v1/chat/completions", json=BODY)
        assert r.status_code == 503, r.text
        assert r.json()["error"]["type"] == "ServiceUnavailableError"
        assert client.get("/health").status_code == 503
        assert client.post("/v1/chat/completions", json=BODY).status_code == 503
