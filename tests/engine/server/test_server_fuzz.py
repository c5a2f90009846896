"""Random request bodies never make the server answer 5xx or kill the engine: every field of the
chat and completions requests gets values of every JSON type, sane or not."""

from __future__ import annotations

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server_util import running_server

CHAT_FIELDS = ["model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "top_k", "seed",
               "min_tokens", "stop", "stop_token_ids", "ignore_eos", "n", "stream", "stream_options", "logprobs",
               "top_logprobs", "tools", "tool_choice", "parallel_tool_calls", "prompt_logprobs",
               "add_generation_prompt", "response_format", "skip_special_tokens"]
COMPLETION_FIELDS = ["model", "prompt", "max_tokens", "temperature", "top_p", "top_k", "seed", "min_tokens", "stop",
                     "stop_token_ids", "ignore_eos", "n", "stream", "stream_options", "logprobs", "echo",
                     "prompt_logprobs", "add_special_tokens", "suffix"]
MESSAGES = [
    [{"role": "user", "content": "hi"}],
    [{"role": "system", "content": "s"}, {"role": "user", "content": [{"type": "text", "text": "a"}]}],
    [{"role": "assistant", "content": None,
      "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
     {"role": "tool", "content": "r", "tool_call_id": "c1"}],
]
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.integers(-3, 30),
    st.floats(allow_nan=False, allow_infinity=False), st.floats(0, 2), st.text(max_size=6),
    st.sampled_from(["auto", "none", "required", "gk", "text", "json_object"]),
)
json_values = st.one_of(
    json_scalars,
    st.lists(st.integers(-5, 600), max_size=4),
    st.lists(st.text(max_size=4), max_size=3),
    st.lists(st.lists(st.integers(0, 300), max_size=3), max_size=2),
    st.dictionaries(st.sampled_from(["include_usage", "type", "name", "function"]), json_scalars, max_size=2),
    st.sampled_from(MESSAGES + [TOOLS, {"type": "function", "function": {"name": "f"}}]),
)


@pytest.fixture(scope="module")
def server(tiny_model_dir):
    with running_server(tiny_model_dir, "--max-model-len", "128") as s:
        yield s


def check(server, path: str, body: dict) -> None:
    body.setdefault("max_tokens", 4)
    r = httpx.post(server.url + path, json=body, timeout=60)
    assert r.status_code < 500, (body, r.text)
    if r.status_code == 200 and body.get("stream") is True:
        assert r.text.rstrip().endswith("data: [DONE]"), (body, r.text[-300:])
    elif r.status_code != 200:
        assert set(r.json()["error"]) == {"message", "type", "param", "code"}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.sampled_from(CHAT_FIELDS), json_values, max_size=6), st.sampled_from(MESSAGES))
def test_random_chat_bodies(server, body, messages):
    body.setdefault("messages", messages)
    check(server, "/v1/chat/completions", body)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.sampled_from(COMPLETION_FIELDS), json_values, max_size=6),
       st.sampled_from(["hi", ["a", "b"], [1, 2, 3], [[5], [6, 7]], "word " * 100]))
def test_random_completion_bodies(server, body, prompt):
    body.setdefault("prompt", prompt)
    check(server, "/v1/completions", body)


def test_engine_survived(server):
    assert httpx.get(server.url + "/health").status_code == 200
    assert "Traceback" not in server.log()
