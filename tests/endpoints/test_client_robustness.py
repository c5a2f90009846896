"""The client against a real loopback server that misbehaves on purpose: rate limits, drips,
keep-alive comment streams, huge bodies, shapes of the wrong type, refused keys, another model.
Every case ends in a classified EndpointError or a protocol warning, never a hang or a crash."""

from __future__ import annotations

import time

import pytest

from gatekeeper.endpoints.client import Endpoint
from gatekeeper.endpoints.exchange import retry_after as _retry_after
from gatekeeper.errors import EndpointError
from scripted_server import Reply, chat_body, forever, scripted_server

MSG = [{"role": "user", "content": "hi"}]


def _ep(url: str, **kw) -> Endpoint:
    return Endpoint("candidate", url, "m", **kw)


def test_429_with_retry_after_is_waited_out_then_answered():
    def handler(req):
        return Reply.json({"error": {"message": "slow down"}}, 429, **{"retry-after": "0.2"}) if req.index < 2 \
            else Reply.json(chat_body())
    with scripted_server(handler) as (url, seen):
        assert _ep(url).chat(MSG).text == "OK"
        assert len(seen) == 3


def test_429_forever_is_rate_limited_once_the_budget_is_spent():
    with scripted_server(lambda req: Reply.json({"error": {"message": "quota"}}, 429, **{"retry-after": "0.2"})) as (url, seen):
        with pytest.raises(EndpointError) as e:
            _ep(url, retry_budget_s=1.0).chat(MSG)
    assert e.value.kind == "rate_limited" and e.value.status == 429 and "quota" in str(e.value)
    assert 3 <= len(seen) <= 7  # retried within the budget, then gave up


def test_a_503_without_retry_after_is_not_retried_when_retries_are_off():
    """By default it is retried a bounded number of times (tests/endpoints/test_transient_retries.py)."""
    with scripted_server(lambda req: Reply.json({"error": {"message": "overloaded"}}, 503)) as (url, seen):
        with pytest.raises(EndpointError) as e:
            _ep(url, transient_attempts=1).chat(MSG)
    assert e.value.kind == "http" and e.value.status == 503 and len(seen) == 1


@pytest.mark.parametrize("reply", [
    Reply(200, {"content-type": "application/json"}, forever(b" "), 0.2),  # a body that drips
    Reply.sse(forever(": keep-alive\n\n"), 0.2),  # a stream of comments only
], ids=["drip", "keepalive-comments"])
def test_a_server_that_keeps_the_connection_busy_hits_the_overall_deadline(reply):
    stream = reply.headers["content-type"] == "text/event-stream"
    with scripted_server(lambda req: reply) as (url, _):
        t0 = time.monotonic()
        with pytest.raises(EndpointError) as e:
            _ep(url, timeout_s=1.5).chat(MSG, stream=stream)
    assert e.value.kind == "timeout" and "overall deadline" in str(e.value)
    assert time.monotonic() - t0 < 30  # the 400-chunk reply would take 80 s: the deadline cut it


def test_a_50_mb_body_is_oversize_and_dropped():
    with scripted_server(lambda req: Reply(200, {"content-type": "application/json"}, forever(b" " * 2**20, 50))) as (url, _):
        with pytest.raises(EndpointError) as e:
            _ep(url).chat(MSG)
    assert e.value.kind == "oversize" and "max_body_bytes" in str(e.value)


@pytest.mark.parametrize("body,what", [
    (chat_body(content=123), "message.content"),
    (chat_body(choices="none"), "choices"),
    (chat_body(usage={"prompt_tokens": "3"}), "usage.prompt_tokens"),
    (chat_body(choices=[{"message": "OK"}]), "message"),
    (chat_body(choices=[{"message": {"content": "OK", "tool_calls": [{"function": "f"}]}}]), "shape"),
    (chat_body(choices=[{"message": {"content": "OK"}, "finish_reason": 7}]), "finish_reason"),
    (chat_body(choices=[{"message": {"content": "OK"}, "logprobs": {"content": [{"token": "OK", "logprob": "-0.1"}]}}]),
     "logprob"),
    ([chat_body()], "not a JSON object"),
])
def test_wrong_shapes_are_malformed(body, what):
    with scripted_server(lambda req: Reply.json(body)) as (url, _):
        with pytest.raises(EndpointError) as e:
            _ep(url).chat(MSG)
    assert e.value.kind == "malformed" and what in str(e.value), str(e.value)


@pytest.mark.parametrize("event", ["[1, 2]", '"text"', "{not json"])
def test_sse_events_that_are_not_objects_are_malformed(event):
    with scripted_server(lambda req: Reply.sse([f"data: {event}\n\n", "data: [DONE]\n\n"])) as (url, _):
        with pytest.raises(EndpointError) as e:
            _ep(url).chat(MSG, stream=True)
    assert e.value.kind == "malformed"


def test_an_answer_naming_another_model_is_a_protocol_warning():
    with scripted_server(lambda req: Reply.json(chat_body(model="other-model"))) as (url, _):
        r = _ep(url).chat(MSG)
    assert r.text == "OK" and any("'other-model', asked for 'm'" in w for w in r.protocol_warnings)


def test_a_refused_key_is_auth_with_a_hint():
    with scripted_server(lambda req: Reply.json({"error": {"message": "invalid key"}}, 401)) as (url, seen):
        with pytest.raises(EndpointError) as e:
            _ep(url).chat(MSG)
        assert e.value.kind == "auth" and "api_key_env" in str(e.value)
        with pytest.raises(EndpointError) as e:
            _ep(url, api_key="k", key_source="the environment variable PROD_KEY").chat(MSG)
        assert e.value.kind == "auth" and "PROD_KEY" in str(e.value)
        assert seen[-1].headers["authorization"] == "Bearer k"


def test_retry_after_forms():
    assert _retry_after("2") == 2.0 and _retry_after(None) is None and _retry_after("soon") is None
    assert _retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date in the past: retry now


def test_a_split_sse_line_and_crlf_are_read():
    chunks = ['data: {"choices": [{"delta": {"con', 'tent": "O"}}]}\r\n\r\n',
              'data: {"choices": [{"delta": {"content": "K"}, "finish_reason": "stop"}]}\r\n\r\n', "data: [DONE]\r\n\r\n"]
    with scripted_server(lambda req: Reply.sse(chunks, 0.05)) as (url, _):
        r = _ep(url).chat(MSG, stream=True)
    assert r.text == "OK" and r.finish_reason == "stop" and not r.protocol_warnings


def _probe_server(refuse: str):
    """Answers chat; refuses requests that carry logprobs with a 400 saying `refuse`."""
    def handler(req):
        if req.path.endswith("/chat/completions") and req.body and req.body.get("logprobs"):
            return Reply.json({"error": {"message": refuse, "type": "BadRequestError"}}, 400)
        if req.path.endswith("/chat/completions") and req.body and req.body.get("stream"):
            return Reply.sse(['data: {"choices": [{"delta": {"content": "OK"}, "finish_reason": "stop"}]}\n\n',
                              "data: [DONE]\n\n"])
        if req.path.endswith("/chat/completions"):
            return Reply.json(chat_body())
        return Reply.json({"error": {"message": "not found"}}, 404)
    return scripted_server(handler)


def test_probe_a_400_refusing_the_parameter_is_a_missing_capability_other_400s_are_errors():
    from gatekeeper.endpoints.probe import probe

    with _probe_server("logprobs are not supported by this server") as (url, _):
        caps = probe(_ep(url))
    assert not caps.logprobs and not caps.errors and "not supported" in caps.note("logprobs")
    with _probe_server("messages: field required") as (url, _):
        caps = probe(_ep(url))
    assert "logprobs" in caps.errors and "field required" in caps.errors["logprobs"]


def test_fastapi_validation_errors_are_read_and_count_as_a_refused_parameter():
    """transformers serve answers an unknown field with FastAPI's 422 `detail` list."""
    from gatekeeper.endpoints.probe import is_missing_capability

    body = {"detail": [{"type": "extra_forbidden", "loc": ["body", "prompt_logprobs"], "msg": "Extra inputs are not permitted"}]}
    with scripted_server(lambda req: Reply.json(body, 422)) as (url, _):
        with pytest.raises(EndpointError) as e:
            _ep(url).completion("hi", prompt_logprobs=1)
    assert "body.prompt_logprobs: Extra inputs are not permitted" in str(e.value)
    assert is_missing_capability("prompt_logprobs", e.value)


def test_transformers_serves_unexpected_fields_answer_is_a_refused_parameter():
    from gatekeeper.endpoints.probe import is_missing_capability

    e = EndpointError("http", "u", "Unexpected fields in the request: {'prompt_logprobs'}", 422)
    assert is_missing_capability("prompt_logprobs", e) and not is_missing_capability("tools", e)
