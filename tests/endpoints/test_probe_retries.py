"""The capability probe and the canary get past a transient 503 (no Retry-After) with a bounded,
counted retry: a real bundled server behind a real proxy that answers every request 503 once."""

from __future__ import annotations

from dataclasses import replace

import httpx
import pytest

from fault_proxy import fault_proxy
from gatekeeper.endpoints.client import Endpoint
from gatekeeper.errors import EndpointError
from gatekeeper.endpoints.probe import probe
from gatekeeper.endpoints.retry import ATTEMPTS, transient, with_retries
from server_util import running_server


def _ep(url: str) -> Endpoint:
    return Endpoint("candidate", url, httpx.get(url + "/v1/models").json()["data"][0]["id"])


def test_the_probe_retries_a_transient_503_and_finds_what_a_direct_probe_finds(tiny_model_dir):
    with running_server(tiny_model_dir) as server:
        direct = probe(_ep(server.url))
        with fault_proxy(server.url, "unavailable_first") as url:
            behind = probe(_ep(url))
    assert not behind.errors, behind.errors
    assert behind.retried and all("HTTP 503" in r for r in behind.retried)
    assert replace(behind, retried=(), notes={}) == replace(direct, notes={})


def test_a_server_that_keeps_answering_503_still_fails_after_the_bounded_retries(tiny_model_dir):
    with running_server(tiny_model_dir) as server, fault_proxy(server.url, "http503") as url:
        ep, retried = _ep(url), []
        with pytest.raises(EndpointError) as e:
            with_retries(lambda: ep.chat([{"role": "user", "content": "hi"}], max_tokens=2), retried, backoff_s=0.01)
    assert e.value.status == 503 and len(retried) == ATTEMPTS - 1


def test_only_502_503_504_are_transient():
    assert [s for s in (400, 404, 429, 500, 501, 502, 503, 504) if transient(EndpointError("http", "u", "m", s))] == [502, 503, 504]
    assert not transient(EndpointError("timeout", "u", "m")) and not transient(EndpointError("connect", "u", "m"))
