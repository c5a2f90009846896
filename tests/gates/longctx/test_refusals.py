"""Which endpoint failures are refusals — the same request refused the same way again — and when
two targets refused alike (a request feature neither serves: not judged, not an ERROR)."""

from __future__ import annotations

import pytest

from gatekeeper.errors import EndpointError, refused_alike
from gatekeeper.gates.longctx.traffic import refused_by_both


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
