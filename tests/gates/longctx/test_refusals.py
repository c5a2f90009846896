"""Which endpoint failures are refusals — the same request refused the same way again — and when
two targets refused alike (a request feature neither serves: not judged, not an ERROR): one refusal
status, or any status but a transient one with bodies that say the same thing; a check sets such
requests aside and judges the rest."""

from __future__ import annotations

import pytest

from gatekeeper.errors import EndpointError, gist, refused_alike
from gatekeeper.gates.longctx.traffic import kept, refused_by_both, refused_each, refused_note


def err(status: int | None, kind: str = "http") -> EndpointError:
    return EndpointError(kind, "http://127.0.0.1:1/v1/chat/completions", "refused", status)


@pytest.mark.parametrize("status,kind,refusal", [
    (400, "http", True), (404, "unsupported", True), (422, "http", True), (501, "unsupported", True),
    (408, "http", False), (429, "http", False), (500, "http", False), (503, "http", False),
    (None, "timeout", False), (None, "connect", False), (400, "malformed", False),
])
def test_a_refusal_is_a_deterministic_client_error(status, kind, refusal):
    assert err(status, kind).refusal is refusal


def test_refused_alike_needs_every_answer_refused_with_one_status():
    assert refused_alike(err(400), err(400)).status == 400
    assert refused_alike(err(400), err(422)) is None
    assert refused_alike(err(400), err(503)) is None
    assert refused_alike(err(400), "an answer") is None
    assert refused_alike() is None


def test_a_check_is_refused_by_both_only_when_every_request_was():
    assert refused_by_both([err(400), err(400)], [err(400), err(400)], [err(400), err(400)]).status == 400
    assert refused_by_both([err(400), err(400)], [err(400), "ok"]) is None      # the candidate answered one
    assert refused_by_both([err(400)], [err(400)], [err(429)]) is None          # the noise-floor pass was rate limited
    assert refused_by_both([], []) is None


LLAMA_500 = ("1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': "
             "\"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}\n\n  File "
             "\"/root/.cache/gatekeeper/llama-cpp/{v}/lib/python3.11/site-packages/llama_cpp/server/app.py\", line {n}, "
             "in create_chat_completion\n    POST /v1/chat/completions")


def said(status: int, message: str, port: int = 1) -> EndpointError:
    return EndpointError("http", f"http://127.0.0.1:{port}/v1/chat/completions", message, status)


def test_a_500_both_targets_answer_with_the_same_message_is_refused_alike():
    """llama-cpp-python answers `response_format: json_schema` with a 500 and its validation message;
    where it failed (the traceback's path and line) differs from build to build, what it says does not."""
    a = said(500, LLAMA_500.replace("{v}", "0.3.35").replace("{n}", "370"), port=1)
    b = said(500, LLAMA_500.replace("{v}", "0.3.36").replace("{n}", "376"), port=2)
    assert gist(a) == gist(b) and "json_schema" in gist(a) and "site-packages" not in gist(a)
    assert refused_alike(a, b) is a
    assert refused_alike(a, b, b) is a                                         # the reference's noise-floor pass too
    assert refused_alike(a, said(500, "Input should be 'text'")) is None       # they say different things
    assert refused_alike(a, said(400, LLAMA_500)) is None                      # one status, not two
    assert refused_alike(a, "an answer") is None


@pytest.mark.parametrize("status", [408, 429, 502, 503, 504])
def test_a_transient_status_is_never_refused_alike_whatever_the_bodies(status):
    assert refused_alike(said(status, "upstream overloaded"), said(status, "upstream overloaded")) is None


def test_a_body_that_says_nothing_but_its_status_is_no_evidence_of_a_refusal():
    for message in ("Internal Server Error", "HTTP 500", ""):
        assert refused_alike(said(500, message), said(500, message)) is None, message
    assert refused_alike(EndpointError("stream", "u", "cut", None), EndpointError("stream", "u", "cut", None)) is None


def test_requests_both_refuse_alike_are_set_aside_and_the_rest_judged():
    too_long = said(400, "This model's maximum context length is 2048 tokens. However, you requested 2331 tokens")
    ref, cand, ref2 = ["a", too_long, "c"], ["a", too_long, "c"], ["a", too_long, "c"]
    refused = refused_each(ref, cand, ref2)
    assert refused == [None, too_long, None]
    assert kept(cand, refused) == ["a", "c"]
    assert refused_note(refused).startswith("; 1 of 3 requests both targets refuse alike (HTTP 400: This model")
    assert refused_note([None, None]) == ""
    assert refused_each(["a", too_long], ["a", "b"]) == [None, None]          # the candidate answered: not set aside
