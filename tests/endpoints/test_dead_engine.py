"""An engine that died behind a server that keeps answering (vLLM's EngineDeadError: every request
HTTP 500, /health 503), through a real scripted server: named with when, which request and which
error, and sent no more work until /health recovers."""

from __future__ import annotations

import pytest

from gatekeeper.endpoints import dead as dead_module
from gatekeeper.endpoints.client import Endpoint
from gatekeeper.endpoints.dead import DEAD_AFTER
from gatekeeper.errors import EndpointError
from gatekeeper.targets.process import free_port
from scripted_server import Reply, chat_body, scripted_server

MSG = [{"role": "user", "content": "hi"}]
ENGINE_DEAD = {"error": {"message": "EngineCore encountered an issue. See stack trace (above) for the root cause.",
                         "type": "InternalServerError", "code": 500}}


def test_an_engine_answering_500_with_health_503_is_declared_dead_and_sent_nothing_more(monkeypatch):
    monkeypatch.setattr(dead_module, "RECHECK_S", 0.3)
    state = {"dead": True}

    def handler(req):
        if req.path == "/health":
            return Reply.json({}, 503 if state["dead"] else 200)
        return Reply.json(ENGINE_DEAD, 500) if state["dead"] else Reply.json(chat_body())
    with scripted_server(handler) as (url, seen):
        ep = Endpoint("candidate", url, "m")
        ep.gate = "shadow"
        for _ in range(DEAD_AFTER):
            with pytest.raises(EndpointError) as e:
                ep.chat(MSG, seed=3, temperature=0.8)
            assert e.value.kind == "http"
        assert ep.dead is not None
        assert ep.dead.gate == "shadow" and ep.dead.health == "HTTP 503" and ep.dead.failed == DEAD_AFTER
        assert "seed=3" in ep.dead.request and "temperature=0.8" in ep.dead.request
        assert "EngineCore encountered an issue" in ep.dead.first_error
        assert "the candidate's engine died at" in ep.dead.describe()
        posts = sum(1 for r in seen if r.method == "POST")
        with pytest.raises(EndpointError) as e:
            ep.chat(MSG)
        assert e.value.kind == "dead" and "not sent" in str(e.value)
        assert sum(1 for r in seen if r.method == "POST") == posts  # nothing more sent
        state["dead"] = False  # the engine came back (a restart): after RECHECK_S /health says so
        import time
        time.sleep(0.4)
        assert ep.chat(MSG).text == "OK"
        assert ep.dead is None


def test_a_server_that_fails_requests_but_says_it_is_healthy_is_not_declared_dead():
    def handler(req):
        return Reply.json({}) if req.path == "/health" else Reply.json({"error": {"message": "bug"}}, 500)
    with scripted_server(handler) as (url, seen):
        ep = Endpoint("candidate", url, "m")
        for _ in range(DEAD_AFTER + 3):
            with pytest.raises(EndpointError) as e:
                ep.chat(MSG)
            assert e.value.kind == "http"
    assert ep.dead is None
    assert sum(1 for r in seen if r.method == "POST") == DEAD_AFTER + 3


def test_a_readiness_poll_of_an_engine_still_starting_is_never_held_back_as_dead():
    """Refused connections while an engine starts are "not up yet": a poll with watch_death=False
    keeps asking (a watching endpoint would stop sending for RECHECK_S: seconds added to every launch)."""
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens: every connection is refused

    def last_error_kind(ep: Endpoint) -> str:
        for _ in range(DEAD_AFTER + 2):
            with pytest.raises(EndpointError) as e:
                ep.get("/health")
        return e.value.kind

    poll, watching = Endpoint("reference", url, "m", timeout_s=1.0, watch_death=False), Endpoint("reference", url, "m", timeout_s=1.0)
    assert last_error_kind(poll) == "connect" and poll.dead is None
    assert last_error_kind(watching) == "dead" and watching.dead is not None
