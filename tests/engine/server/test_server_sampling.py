"""Sampling controls through the server, on the scripted checkpoint whose greedy output is known:
stop strings, stop token ids, min_tokens, ignore_eos, max_tokens and max_completion_tokens."""

from __future__ import annotations

import httpx
import openai
import pytest

from scripted_checkpoint import TOOL_SCRIPT, build_scripted_checkpoint
from server_util import running_server

SCRIPT_TEXT = "".join(TOOL_SCRIPT)
MESSAGES = [{"role": "user", "content": "go"}]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with running_server(build_scripted_checkpoint(tmp_path_factory.mktemp("scripted"), TOOL_SCRIPT)) as s:
        yield s


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.v1, api_key="x", max_retries=0)


def chat(client, **kw):
    return client.chat.completions.create(model=client.models.list().data[0].id, messages=MESSAGES,
                                          temperature=0, **kw).choices[0]


def token_id(server, piece: str) -> int:
    ids = httpx.post(server.url + "/tokenize", json={"prompt": piece}).json()["tokens"]
    assert len(ids) == 1, ids
    return ids[0]


def test_script_ends_at_eos(client):
    r = chat(client)
    assert r.message.content == SCRIPT_TEXT and r.finish_reason == "stop"


def test_stop_string_cuts_and_is_reported(client):
    r = chat(client, stop=["</tool_call>"])
    assert r.message.content == SCRIPT_TEXT[: SCRIPT_TEXT.index("</tool_call>")]
    assert r.finish_reason == "stop" and r.model_extra["stop_reason"] == "</tool_call>"


def test_stop_string_split_across_tokens(client):
    # "k.<tool" spans the first two pieces of the script
    r = chat(client, stop="k.<tool")
    assert r.message.content == "Let me chec" and r.finish_reason == "stop"


def test_stream_with_stop_string_matches(client):
    stream = client.chat.completions.create(model=client.models.list().data[0].id, messages=MESSAGES,
                                            temperature=0, stop=["</tool_call>"], stream=True)
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text == SCRIPT_TEXT[: SCRIPT_TEXT.index("</tool_call>")]


def test_stop_token_id(server, client):
    tid = token_id(server, "</tool_call>\n")
    r = chat(client, extra_body={"stop_token_ids": [tid]})
    assert r.finish_reason == "stop" and r.model_extra["stop_reason"] == tid
    assert r.message.content.startswith(SCRIPT_TEXT[: SCRIPT_TEXT.index("</tool_call>")])
    assert "<tool_" not in r.message.content[r.message.content.index("</tool_call>"):]


def test_unterminated_call_after_stop_string_still_parses(client):
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    r = chat(client, stop=["</tool_call>"], tools=tools)
    assert r.finish_reason == "tool_calls" and r.message.content == "Let me check."
    assert [c.function.name for c in r.message.tool_calls] == ["get_weather"]


def test_max_tokens_and_max_completion_tokens(server, client):
    r = chat(client, max_tokens=3)
    assert r.finish_reason == "length" and r.message.content == "".join(TOOL_SCRIPT[:3])
    r = chat(client, max_tokens=100, extra_body={"max_completion_tokens": 2})
    assert r.finish_reason == "length" and r.message.content == "".join(TOOL_SCRIPT[:2])


def test_min_tokens_and_ignore_eos_run_past_the_script(client):
    n = len(TOOL_SCRIPT) + 1  # the script plus its end-of-turn token
    longer = client.chat.completions.create(model=client.models.list().data[0].id, messages=MESSAGES,
                                            temperature=0, max_tokens=n + 5, extra_body={"min_tokens": n + 3})
    assert longer.usage.completion_tokens >= n + 3
    assert longer.choices[0].message.content.startswith(SCRIPT_TEXT)
    ignored = client.chat.completions.create(model=client.models.list().data[0].id, messages=MESSAGES,
                                             temperature=0, max_tokens=n + 5, extra_body={"ignore_eos": True})
    assert ignored.usage.completion_tokens == n + 5 and ignored.choices[0].finish_reason == "length"
