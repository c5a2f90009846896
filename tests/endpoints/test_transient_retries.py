"""Transient 502/503/504 without Retry-After, through real servers: the client asks again a
bounded, counted number of times for every gate, so a clean candidate behind flaky proxies is
judged like one without them; a server answering 503 forever still fails; the performance
gate's load generator never retries (a failed request is what it measures)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fault_proxy import fault_proxy
from gatekeeper.endpoints.client import Endpoint
from gatekeeper.errors import EndpointError
from gatekeeper.endpoints.retry import ATTEMPTS, GIVE_UP_AFTER, MAX_WAITS, with_retries
from scripted_server import Reply, chat_body, scripted_server
from paths import GK_TINY

MSG = [{"role": "user", "content": "hi"}]
OVERLOADED = {"error": {"message": "upstream overloaded"}}


def _posts(record: list) -> int:
    return sum(1 for method, _, _ in record if method == "POST")


def test_a_503_then_an_answer_is_one_counted_retry_for_chat_and_get():
    def handler(req):
        return Reply.json(OVERLOADED, 503) if req.index in (0, 2) else Reply.json(chat_body())
    with scripted_server(handler) as (url, seen):
        ep = Endpoint("candidate", url, "m")
        ep.gate = "golden"
        assert ep.chat(MSG).text == "OK"
        assert ep.get("/health").status_code == 200
    assert len(seen) == 4
    assert [(r.role, r.gate, r.method, r.path, r.status) for r in ep.retried] == [
        ("candidate", "golden", "POST", "/v1/chat/completions", 503), ("candidate", "golden", "GET", "/health", 503)]
    assert ep.retried[0].detail == "upstream overloaded"


@pytest.mark.parametrize("status", [502, 503, 504])
def test_a_transient_failure_kept_after_the_retries_is_raised_saying_so(status):
    with scripted_server(lambda req: Reply.json(OVERLOADED, status)) as (url, seen):
        ep = Endpoint("candidate", url, "m")
        with pytest.raises(EndpointError) as e:
            ep.chat(MSG)
    assert len(seen) == ATTEMPTS and len(ep.retried) == ATTEMPTS - 1
    assert e.value.kind == "http" and e.value.status == status and e.value.retries_done
    assert f"still after {ATTEMPTS - 1} retries" in str(e.value)


@pytest.mark.parametrize("status", [500, 400, 404, 422])
def test_500_and_4xx_are_not_retried(status):
    with scripted_server(lambda req: Reply.json({"error": {"message": "no"}}, status)) as (url, seen):
        with pytest.raises(EndpointError):
            Endpoint("candidate", url, "m").chat(MSG)
    assert len(seen) == 1


def test_retry_after_is_honoured_but_not_forever():
    """A 503 saying "come back now" forever is asked MAX_WAITS more times, not until the deadline."""
    with scripted_server(lambda req: Reply.json(OVERLOADED, 503, **{"retry-after": "0"})) as (url, seen):
        with pytest.raises(EndpointError) as e:
            Endpoint("candidate", url, "m").chat(MSG)
    assert e.value.status == 503 and len(seen) == MAX_WAITS + 1


def test_a_server_failing_every_request_stops_being_retried_until_one_succeeds():
    healthy = [False]

    def handler(req):
        if req.path == "/health":  # overloaded, not dead: it says it is healthy (endpoints/dead.py)
            return Reply.json({})
        return Reply.json(chat_body()) if healthy[0] else Reply.json(OVERLOADED, 503)
    with scripted_server(handler) as (url, seen):
        ep = Endpoint("candidate", url, "m")
        posts = lambda: sum(1 for r in seen if r.method == "POST")  # noqa: E731
        for _ in range(GIVE_UP_AFTER + 2):
            with pytest.raises(EndpointError):
                ep.chat(MSG)
        assert posts() == GIVE_UP_AFTER * ATTEMPTS + 2  # the last two were sent once each
        healthy[0] = True
        assert ep.chat(MSG).text == "OK"
        healthy[0] = False
        with pytest.raises(EndpointError):
            ep.chat(MSG)
        assert posts() == GIVE_UP_AFTER * ATTEMPTS + 2 + 1 + ATTEMPTS  # retried again after the success
        assert ep.dead is None


def test_with_retries_lists_the_clients_retries_and_does_not_multiply_them():
    with scripted_server(lambda req: Reply.json(OVERLOADED, 503)) as (url, seen):
        retried: list[str] = []
        with pytest.raises(EndpointError):
            with_retries(lambda: Endpoint("candidate", url, "m").chat(MSG), retried)
    assert len(seen) == ATTEMPTS and retried == ["HTTP 503: upstream overloaded"] * (ATTEMPTS - 1)


def test_the_load_generator_never_retries(tiny_model_dir):
    pytest.importorskip("torch")
    from gatekeeper.perf.loadgen import LoadProfile, LoadRequest, LoadTarget, run_load
    from server_util import running_server

    record: list = []
    with running_server(tiny_model_dir) as server, fault_proxy(server.url, "unavailable_first", record=record) as url:
        requests = [LoadRequest({"prompt": f"Hello number {i}", "max_tokens": 2}) for i in range(4)]
        result = run_load(LoadTarget(url, "m"), requests, LoadProfile("synchronous"))
    assert [r.error[:8] for r in result.records] == ["HTTP 503"] * 4
    assert _posts(record) == 4


@pytest.fixture(scope="module")
def servers():
    pytest.importorskip("torch")
    from server_util import running_server

    with running_server(GK_TINY, "--profile", "reference") as ref, running_server(GK_TINY, "--profile", "optimized") as cand:
        yield ref, cand


def _clean_run_behind_503_proxies(tmp_path: Path, servers, gates: str) -> tuple:
    """A run whose reference and candidate each sit behind a real proxy answering every request 503
    once (half of all that is sent, on either side alike: the reference's twin repeats included, so
    neither side retries more often and `<gate>.retry_excess` has nothing to find); (outcome,
    distinct POSTs)."""
    from run_util import gk_run

    ref, cand = servers
    ref_seen: list = []
    cand_seen: list = []
    policy = tmp_path / "policy.yaml"
    smoke = (GK_TINY.parents[1] / "shipped" / "gates" / "smoke.yaml").read_text()
    smoke = re.sub(r"    materiality: \{[^}]*\}", "    materiality: {disagreement: 0.2, task_failure: 0.2, degeneration: 0.2, "
                   "nonfinite: 0.2, error: 0.2, retry: 0.2, json_parse: 1.0, tool_parse: 1.0, near_tie: 0.2}",
                   smoke)  # what 24 pairs rule out
    assert "retry: 0.2" in smoke
    policy.write_text(smoke.replace(
        "      - {name: low-risk-tenant, tenants: [internal], budget: 24}\n      - {name: wide, share: 1.0, budget: 72}",
        "      - {name: wide, share: 1.0, budget: 24}"))
    with fault_proxy(ref.url, "unavailable_each_once", record=ref_seen) as ref_url, \
            fault_proxy(cand.url, "unavailable_each_once", record=cand_seen) as cand_url:
        out = gk_run(tmp_path / "out", "--reference", ref_url, "--candidate", cand_url, "--model", "gk-tiny",
                     "--gates", gates, "--policy", str(policy))
    assert out.summary is not None, out.stderr
    errors = [(c["id"], c["reason"]) for g in out.summary["gates"] for c in g["checks"] if c["status"] == "ERROR"]
    assert not errors, errors
    assert out.summary["verdict"] == "PROMOTE", out.summary["reasons"]
    return out, len({b for seen in (ref_seen, cand_seen) for m, _, b in seen if m == "POST"})


def test_startup_and_numerics_behind_proxies_that_fail_every_request_once_promote_a_clean_candidate(tmp_path, servers):
    out, first_sends = _clean_run_behind_503_proxies(tmp_path, servers, "startup,numerics")
    assert out.gate("numerics")["coverage"]["judged"] == out.gate("numerics")["coverage"]["total"] > 0
    assert first_sends >= 10  # each answered 503 once: the retries carried the run
    # Each gate's notes count the retries its requests needed, per target.
    note = next((n for n in out.gate("numerics")["notes"] if "retried after a transient failure" in n), None)
    assert note is not None and "reference" in note and "candidate" in note, out.gate("numerics")["notes"]


@pytest.mark.slow  # ~70 s: golden's smoke subset and 24 requests of gate 5 as well
def test_every_correctness_gate_behind_proxies_that_fail_every_request_once_promotes_a_clean_candidate(tmp_path, servers):
    out, first_sends = _clean_run_behind_503_proxies(tmp_path, servers, "startup,numerics,golden,shadow")
    assert out.gate("shadow")["coverage"]["judged"] == 24
    assert first_sends >= 50


def test_a_candidate_answering_503_forever_fails_after_bounded_retries(tmp_path, servers):
    """Every POST to the candidate is a 503: the canary still fails, and the retries stay bounded."""
    from run_util import gk_run

    ref, cand = servers
    seen: list = []
    with fault_proxy(cand.url, "http503", record=seen) as cand_url:
        out = gk_run(tmp_path, "--reference", ref.url, "--candidate", cand_url, "--model", "gk-tiny", "--gates", "startup")
    assert out.summary is not None, out.stderr
    assert out.summary["verdict"] != "PROMOTE", out.summary["reasons"]
    canary = out.check("startup.canary.candidate")
    assert canary["status"] in ("FAIL", "ERROR") and f"still after {ATTEMPTS - 1} retries" in canary["reason"], canary
    assert _posts(seen) <= GIVE_UP_AFTER * ATTEMPTS + 6, _posts(seen)  # the probe stops at a dead server; no retry storm


def test_a_connection_closed_before_any_answer_is_sent_once_more_on_a_fresh_connection():
    def handler(req):
        return Reply.dropped() if req.index in (0, 2) else Reply.json(chat_body())
    with scripted_server(handler) as (url, seen):
        ep = Endpoint("candidate", url, "m")
        ep.gate = "longctx"
        assert ep.chat(MSG).text == "OK"
        assert ep.get("/health").status_code == 200
    assert len(seen) == 4
    assert [(r.role, r.gate, r.method, r.path, r.reconnected) for r in ep.retried] == [
        ("candidate", "longctx", "POST", "/v1/chat/completions", True), ("candidate", "longctx", "GET", "/health", True)]
    assert ep.retried[0].describe().startswith("connection closed before any response")
    assert ep.sent == {"longctx": 2}  # a retry is not another request


def test_a_connection_closed_twice_is_a_stream_error_after_one_retry():
    with scripted_server(lambda req: Reply.dropped()) as (url, seen):
        ep = Endpoint("candidate", url, "m")
        with pytest.raises(EndpointError) as e:
            ep.chat(MSG)
    assert len(seen) == 2 and len(ep.retried) == 1
    assert e.value.kind == "stream"


def test_a_stream_cut_after_its_first_byte_is_evidence_not_retried():
    events = ['data: {"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,'
              '"delta":{"content":"O"},"finish_reason":null}]}\n\n']

    def handler(req):
        return Reply(200, {"content-type": "text/event-stream", "content-length": "100000"}, [e.encode() for e in events])
    with scripted_server(handler) as (url, seen):
        ep = Endpoint("candidate", url, "m")
        with pytest.raises(EndpointError) as e:
            ep.chat(MSG, stream=True)
    assert len(seen) == 1 and not ep.retried
    assert e.value.kind == "stream" and "the answer broke after" in str(e.value)
