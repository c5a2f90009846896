"""The tape's parts on real values: answers survive the round trip through JSON unchanged (latencies
included), a request's key ignores keyword order, a periodic sample is keyed apart, and nothing the
redactor knows reaches the recording's files, even before the run's last sweep."""

from __future__ import annotations

import json

import httpx

from gatekeeper.errors import EndpointError
from gatekeeper.redact import Redactor
from gatekeeper.endpoints.responses import ChatResponse, CompletionResponse, TokenLogprob, ToolCall
from gatekeeper.tape.codec import decode, encode
from gatekeeper.tape.endpoint import Asked, TapedEndpoint
from gatekeeper.tape.key import request_key
from gatekeeper.tape.recording import Recorded, Recorder


def test_every_kind_of_answer_round_trips():
    chat = ChatResponse(text="hi", tool_calls=(ToolCall("f", '{"a": 1}', "call-1"),), finish_reason="tool_calls", prompt_tokens=3,
                        completion_tokens=2,
                        logprobs=(TokenLogprob("hi", -0.25, {"hi": -0.25, "yo": -1.5}), TokenLogprob("!",
                                                                                                     None)), e2e_s=0.125, ttft_s=0.0625,
                        streamed=True, protocol_warnings=("no [DONE]",), raw={"id": "x"}, model="m")
    completion = CompletionResponse("x", "length", ("a", "b"), (-1.0, None), ({"a": -1.0}, None), ({"a": 1},), 1, 2, 0.5)
    error = EndpointError("http", "http://h/v1/chat/completions", "context too long", 400)
    for value in (chat, completion, {"tokens": [1, 2]}, [1, 2, 3]):
        assert decode(json.loads(json.dumps(encode(value)))) == value
    again = decode(json.loads(json.dumps(encode(error))))
    assert (again.kind, again.url, again.detail, again.status, str(again)) == \
        (error.kind, error.url, error.detail, error.status, str(error))
    raw = httpx.Response(503, headers=[("retry-after", "1")], content=b"\x00busy", request=httpx.Request("GET", "http://h/x"))
    back = decode(json.loads(json.dumps(encode(raw))))
    assert (back.status_code, back.headers["retry-after"], back.content, str(back.request.url)) == \
        (503, "1", b"\x00busy", "http://h/x")


def test_a_requests_key_ignores_keyword_order_and_a_periodic_sample_is_keyed_apart():
    a = request_key("chat", ([{"role": "user", "content": "x"}],), {"max_tokens": 4, "temperature": 0.0})
    b = request_key("chat", ([{"role": "user", "content": "x"}],), {"temperature": 0.0, "max_tokens": 4})
    assert a == b != request_key("chat", ([{"role": "user", "content": "y"}],), {"temperature": 0.0, "max_tokens": 4})
    ep = TapedEndpoint("candidate", "http://127.0.0.1:9", "m")
    plain = ep._key("get", ("/metrics",), {})
    with ep.periodic():
        sampled = ep._key("get", ("/metrics",), {})
    assert sampled != plain and ep._key("get", ("/metrics",), {}) == plain
    ep.close()


def test_the_recording_holds_no_secret_the_redactor_knows(tmp_path):
    secret = "sk-test-recorded-9f8e7d"
    recorder = Recorder(tmp_path, Redactor([secret]).text)
    asked = Asked("reference", "golden", "chat", "chat:abc", 0)
    recorder.keep(asked, encode(EndpointError("auth", f"http://u:{secret}@h/v1", f"refused {secret}", 401)), False)
    recorder.liveness("golden", {"gone": {"reference": False}, "alive": {"reference": True}, "tail": [f"--api-key {secret}"]})
    recorder.targets({"reference": {"base_url": "http://h", "model": "m", "ready": True, "log_lines": [f"key={secret}"]}})
    recorder.close()
    for path in (tmp_path / "answers").iterdir():
        assert secret not in path.read_text(), path
    recorded = Recorded(tmp_path)
    assert recorded.answer(asked)["kind"] == "auth" and recorded.liveness["golden"]["gone"] == {"reference": False}
