"""Tool calls end to end over a scripted checkpoint (see scripted_checkpoint.py) that really says
"Let me check." and two Hermes calls token by token, so the server's parsing, streaming and
finish reasons are tested on engine output, not on canned strings. vLLM's own streaming checks
(tests/tool_use/test_parallel_tool_calls.py) are applied as written there."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from scripted_checkpoint import TOOL_SCRIPT, TRIGGER, build_scripted_checkpoint
from server_util import running_server

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
                                      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "set_alarm", "description": "Set an alarm",
                                      "parameters": {"type": "object", "properties": {"time": {"type": "string"}}}}},
]
MESSAGES = [{"role": "user", "content": "Weather in Paris, and wake me at 07:30 on monday."}]
EXPECTED = [("get_weather", {"city": "Paris", "unit": "celsius"}), ("set_alarm", {"time": "07:30", "days": ["monday"]})]
NAMED_PREFIX = '<tool_call>{"name": "get_weather", "arguments": '


@pytest.fixture(scope="module")
def scripted_dir(tmp_path_factory):
    return build_scripted_checkpoint(tmp_path_factory.mktemp("scripted-tools"), TOOL_SCRIPT)


@pytest.fixture(scope="module")
def client(scripted_dir):
    with running_server(scripted_dir) as s:
        yield openai.OpenAI(base_url=s.v1, api_key="x", max_retries=0)


def ask(client, **kw):
    return client.chat.completions.create(model=client.models.list().data[0].id, messages=MESSAGES, tools=TOOLS,
                                          temperature=0, max_tokens=40, **kw)


def collect_stream(client, **kw) -> dict:
    """Apply vLLM's streaming tool-call checks and return the assembled message."""
    content, calls, finishes, logprob_tokens = "", {}, [], []
    for chunk in ask(client, stream=True, **kw):
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        if choice.finish_reason:
            finishes.append(choice.finish_reason)
        if choice.logprobs and choice.logprobs.content:
            logprob_tokens += [lp.token for lp in choice.logprobs.content]
        content += choice.delta.content or ""
        deltas = choice.delta.tool_calls or []
        assert len(deltas) <= 1  # one tool-call delta per chunk
        for d in deltas:
            call = calls.setdefault(d.index, {"id": None, "name": None, "arguments": ""})
            if d.id:
                assert call["id"] is None and len(d.id) >= 9
                call["id"] = d.id
            if d.function and d.function.name:
                assert call["name"] is None  # the name comes once, in full
                call["name"] = d.function.name
            if d.function and d.function.arguments:
                call["arguments"] += d.function.arguments
    return {"content": content, "calls": [calls[i] for i in sorted(calls)], "finishes": finishes,
            "logprob_tokens": logprob_tokens}


def test_parallel_calls_non_streaming(client):
    r = ask(client)
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Let me check."
    calls = choice.message.tool_calls
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == EXPECTED
    assert all(c.type == "function" and len(c.id) >= 9 for c in calls) and len({c.id for c in calls}) == 2


def test_parallel_calls_streaming_match_non_streaming(client):
    full = ask(client, logprobs=True).choices[0]
    got = collect_stream(client, logprobs=True)
    assert got["finishes"] == ["tool_calls"]
    assert got["content"] == full.message.content
    assert [(c["name"], json.loads(c["arguments"])) for c in got["calls"]] == EXPECTED
    assert [(c["name"], c["arguments"]) for c in got["calls"]] == \
        [(c.function.name, c.function.arguments) for c in full.message.tool_calls]
    assert got["logprob_tokens"] == [lp.token for lp in full.logprobs.content]


def test_parallel_tool_calls_false_keeps_the_first(client):
    r = ask(client, parallel_tool_calls=False).choices[0]
    assert [c.function.name for c in r.message.tool_calls] == ["get_weather"] and r.finish_reason == "tool_calls"
    streamed = collect_stream(client, parallel_tool_calls=False)
    assert [c["name"] for c in streamed["calls"]] == ["get_weather"] and streamed["finishes"] == ["tool_calls"]


def test_tool_choice_none_returns_raw_text(client):
    r = ask(client, tool_choice="none").choices[0]
    assert r.finish_reason == "stop" and not r.message.tool_calls
    assert r.message.content == "".join(TOOL_SCRIPT)
    streamed = collect_stream(client, tool_choice="none")
    assert streamed["content"] == "".join(TOOL_SCRIPT) and streamed["calls"] == []


def test_no_tools_means_no_parsing(client):
    r = client.chat.completions.create(model=client.models.list().data[0].id, messages=MESSAGES, temperature=0)
    assert r.choices[0].message.content == "".join(TOOL_SCRIPT) and not r.choices[0].message.tool_calls


BOUNDED = [{"type": "function", "function": {**t["function"], "parameters": {
    "type": "object", "properties": {k: {"type": "string", "maxLength": 5} for k in t["function"]["parameters"]["properties"]}}}}
    for t in TOOLS]


def test_required_is_enforced_against_the_model_s_own_preference(client):
    """The scripted model wants to say "Let me check." and add a `unit`; the grammar allows only
    calls of the offered tools with their declared arguments, `<tool_call>` spelled as the
    tokenizer's own added token (strings are bounded: this model never closes one by itself)."""
    r = client.chat.completions.create(model=client.models.list().data[0].id, messages=MESSAGES, tools=BOUNDED,
                                       tool_choice="required", temperature=0, max_tokens=60, parallel_tool_calls=False)
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    [call] = choice.message.tool_calls
    params = {t["function"]["name"]: t["function"]["parameters"] for t in BOUNDED}[call.function.name]
    args = json.loads(call.function.arguments)
    assert set(args) <= set(params["properties"]) and all(len(v) <= 5 for v in args.values())


def test_tool_results_render_in_the_prompt(client):
    call = ask(client).choices[0].message.tool_calls[0]
    follow_up = MESSAGES + [
        {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
        {"role": "tool", "tool_call_id": call.id, "content": json.dumps({"temperature": 21})},
    ]
    base = str(client.base_url).removesuffix("/").removesuffix("/v1")
    ids = httpx.post(base + "/tokenize", json={"messages": follow_up, "tools": TOOLS}).json()["tokens"]
    text = httpx.post(base + "/detokenize", json={"tokens": ids}).json()["prompt"]
    assert '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"' in text
    assert '<tool_response>\n{"temperature": 21}\n</tool_response>' in text
    r = client.chat.completions.create(model=client.models.list().data[0].id, messages=follow_up, tools=TOOLS,
                                       temperature=0, max_tokens=40)
    assert r.choices[0].finish_reason in ("tool_calls", "stop", "length")


def test_tool_parser_partial_fault_breaks_only_streaming(scripted_dir):
    with running_server(scripted_dir, "--fault", "tool-parser-partial") as s:
        client = openai.OpenAI(base_url=s.v1, api_key="x", max_retries=0)
        full = ask(client).choices[0]
        assert [(c.function.name, json.loads(c.function.arguments)) for c in full.message.tool_calls] == EXPECTED
        got = collect_stream(client)
        untouched = collect_stream(client, tool_choice="none")  # no tool parsing: the fault has nothing to bite
        assert untouched["content"] == "".join(TOOL_SCRIPT) and untouched["calls"] == []

    def valid(arguments: str) -> bool:
        try:
            json.loads(arguments)
            return True
        except json.JSONDecodeError:
            return False

    leaked = "<tool" in got["content"] or "tool_call>" in got["content"]
    broken = not all(valid(c["arguments"]) for c in got["calls"])
    assert leaked or broken, got


@pytest.fixture(scope="module")
def named_client(tmp_path_factory):
    # a model that continues the forced prefix of a named tool choice with its arguments
    ckpt = build_scripted_checkpoint(tmp_path_factory.mktemp("scripted-named"),
                                     ('{"city": "Paris"}}', "</tool_call>"), trigger=TRIGGER + NAMED_PREFIX)
    with running_server(ckpt) as s:
        yield openai.OpenAI(base_url=s.v1, api_key="x", max_retries=0)


def test_named_tool_choice_finishes_with_stop(named_client):
    choice = {"type": "function", "function": {"name": "get_weather"}}
    r = ask(named_client, tool_choice=choice).choices[0]
    assert r.finish_reason == "stop"  # vLLM after PR #25054: named function → "stop"
    assert [(c.function.name, json.loads(c.function.arguments)) for c in r.message.tool_calls] == \
        [("get_weather", {"city": "Paris"})]
    streamed = collect_stream(named_client, tool_choice=choice)
    assert streamed["finishes"] == ["stop"]
    assert [(c["name"], json.loads(c["arguments"])) for c in streamed["calls"]] == [("get_weather", {"city": "Paris"})]
