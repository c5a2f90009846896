"""Structured outputs on the bundled engine, through the official `openai` client against a real
server: `response_format`, vLLM's `structured_outputs`, `tool_choice` required and named, streaming
against non-streaming, the 400s, the backend on /version, and the `grammar-mask-misalign` fault."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import jsonschema
import openai
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from gatekeeper.engine.grammar import GrammarSpec, strict
from gatekeeper.engine.llm import LLM
from gatekeeper.engine.sampling_params import SamplingParams
from schema_strategies import bounded_object_schemas, object_schemas
from run_util import gk_run
from server_util import running_server
from paths import GK_TINY

WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Get the weather for a city",
                                            "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                           "required": ["city"]}}}
TIME = {"type": "function", "function": {"name": "get_time", "description": "Get the time in a zone",
                                         "parameters": {"type": "object", "properties": {
                                             "zone": {"type": "string"}, "fmt": {"enum": ["12h", "24h"]}},
                                             "required": ["zone"]}}}
CITY = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
        "required": ["city", "days"]}
PROPERTY_RUNS = settings(max_examples=10, deadline=None, database=None, derandomize=True,
                         suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with running_server(GK_TINY, "--profile", "optimized") as s:
        yield s.url


@pytest.fixture(scope="module")
def client(server: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=server + "/v1", api_key="unused", max_retries=0)


def _chat(client: openai.OpenAI, content: str, **kw):
    return client.chat.completions.create(model="gk-tiny", messages=[{"role": "user", "content": content}],
                                          temperature=0, max_tokens=kw.pop("max_tokens", 160), **kw)


def _calls_validate(message, tools: list[dict]) -> list[tuple[str, dict]]:
    by_name = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    assert message.tool_calls, message
    out = []
    for call in message.tool_calls:
        args = json.loads(call.function.arguments)
        jsonschema.validate(args, by_name[call.function.name])
        out.append((call.function.name, args))
    return out


def test_required_tool_choice_yields_a_call_that_validates(client: openai.OpenAI) -> None:
    """The issue's own example: one tool, `required`, the official client."""
    r = _chat(client, "What is the weather in Paris?", tools=[WEATHER], tool_choice="required")
    assert _calls_validate(r.choices[0].message, [WEATHER])[0][0] == "get_weather"
    assert r.choices[0].message.content is None and r.choices[0].finish_reason == "tool_calls"


def test_a_named_function_is_the_only_call(client: openai.OpenAI) -> None:
    r = _chat(client, "What is the weather in Paris?", tools=[WEATHER, TIME],
              tool_choice={"type": "function", "function": {"name": "get_time"}})
    calls = _calls_validate(r.choices[0].message, [WEATHER, TIME])
    assert [name for name, _ in calls] == ["get_time"] and r.choices[0].finish_reason == "stop"


def test_without_parallel_calls_there_is_exactly_one(client: openai.OpenAI) -> None:
    r = _chat(client, "Weather in Rome and the time in Oslo?", tools=[WEATHER, TIME], tool_choice="required",
              parallel_tool_calls=False)
    assert len(_calls_validate(r.choices[0].message, [WEATHER, TIME])) == 1


@PROPERTY_RUNS
@given(params=bounded_object_schemas, named=st.booleans(), seed=st.integers(0, 5))
def test_forced_tool_calls_validate_against_random_schemas(client: openai.OpenAI, params: dict, named: bool,
                                                           seed: int) -> None:
    tool = {"type": "function", "function": {"name": "do_it", "description": "Do it", "parameters": params}}
    choice = {"type": "function", "function": {"name": "do_it"}} if named else "required"
    r = client.chat.completions.create(model="gk-tiny", messages=[{"role": "user", "content": "Please do it."}],
                                       tools=[tool, WEATHER], tool_choice=choice, temperature=0.8, seed=seed,
                                       max_tokens=256)
    calls = _calls_validate(r.choices[0].message, [tool, WEATHER])
    assert not named or [n for n, _ in calls] == ["do_it"]


def _answer(client: openai.OpenAI, schema: dict, seed: int):
    return client.chat.completions.create(model="gk-tiny", messages=[{"role": "user", "content": "Answer in JSON."}],
                                          response_format={"type": "json_schema", "json_schema": {"name": "a", "schema": schema}},
                                          temperature=0.8, seed=seed, max_tokens=256).choices[0]


@PROPERTY_RUNS
@given(schema=bounded_object_schemas, seed=st.integers(0, 5))
def test_json_schema_answers_are_complete_and_validate(client: openai.OpenAI, schema: dict, seed: int) -> None:
    choice = _answer(client, schema, seed)
    assert choice.finish_reason == "stop", choice.message.content
    jsonschema.validate(json.loads(choice.message.content), schema)


@PROPERTY_RUNS
@given(schema=object_schemas, seed=st.integers(0, 5))
def test_finished_answers_validate_with_unbounded_strings_too(client: openai.OpenAI, schema: dict, seed: int) -> None:
    choice = _answer(client, schema, seed)
    assume(choice.finish_reason == "stop")  # max_tokens may cut an unbounded string: not the grammar's to prevent
    jsonschema.validate(json.loads(choice.message.content), schema)


def test_streaming_and_non_streaming_agree(client: openai.OpenAI) -> None:
    fmt = {"type": "json_schema", "json_schema": {"name": "w", "schema": CITY}}
    whole = _chat(client, "Weather for Paris, 3 days, as JSON.", response_format=fmt).choices[0].message.content
    streamed = "".join(c.choices[0].delta.content or "" for c in
                       _chat(client, "Weather for Paris, 3 days, as JSON.", response_format=fmt, stream=True) if c.choices)
    assert streamed == whole and json.loads(whole).keys() == {"city", "days"}
    calls = _chat(client, "What is the weather in Paris?", tools=[WEATHER, TIME], tool_choice="required")
    parts: dict[int, list[str]] = {}
    for chunk in _chat(client, "What is the weather in Paris?", tools=[WEATHER, TIME], tool_choice="required", stream=True):
        for d in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
            name, args = parts.setdefault(d.index, ["", ""])
            parts[d.index] = [name + (d.function.name or ""), args + (d.function.arguments or "")]
    assert [(n, json.loads(a)) for n, a in parts.values()] == _calls_validate(calls.choices[0].message, [WEATHER, TIME])


def test_json_object_allows_any_keys_and_answers_as_the_free_model_does(client: openai.OpenAI) -> None:
    """`json_object` is any object (vLLM's backends): a grammar closed to every key left `{}`."""
    ask = "Facts: pet is heron.\nReturn these facts as a JSON object."
    free = _chat(client, ask, max_tokens=40).choices[0].message.content
    constrained = _chat(client, ask, max_tokens=40, response_format={"type": "json_object"}).choices[0].message.content
    assert json.loads(constrained) == json.loads(free) and json.loads(constrained) != {}


def test_json_object_and_vllm_structured_outputs_on_completions(client: openai.OpenAI) -> None:
    text = client.completions.create(model="gk-tiny", prompt="A JSON object:", max_tokens=160, temperature=0,
                                     extra_body={"response_format": {"type": "json_object"}}).choices[0].text
    assert isinstance(json.loads(text), dict)
    choice = client.completions.create(model="gk-tiny", prompt="Pick one:", max_tokens=8, temperature=0,
                                       extra_body={"structured_outputs": {"choice": ["alpha", "beta"]}}).choices[0]
    assert choice.text in ("alpha", "beta") and choice.finish_reason == "stop"
    regex = client.completions.create(model="gk-tiny", prompt="A date:", max_tokens=16, temperature=0,
                                      extra_body={"structured_outputs": {"regex": r"20[0-9]{2}-[01][0-9]"}}).choices[0].text
    assert len(regex) == 7 and regex[:2] == "20" and regex[4] == "-"
    as_text = client.completions.create(model="gk-tiny", prompt="JSON:", max_tokens=40, temperature=0,
                                        extra_body={"structured_outputs": {"json": json.dumps(CITY)}}).choices[0].text
    jsonschema.validate(json.loads(as_text), CITY)


@pytest.mark.parametrize(("body", "param", "needle"), [
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "u", "schema": {"type": "array", "uniqueItems": True}}}},
     "response_format", "uniqueItems"),
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "u", "schema": {"not": {"type": "string"}}}}},
     "response_format", "not"),
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "no schema"}}}, "response_format", "schema"),
    ({"response_format": {"type": "yaml"}}, "response_format", "yaml"),
    ({"structured_outputs": {"regex": "(a|b"}}, "structured_outputs", "regex"),
    ({"structured_outputs": {"regex": "a", "choice": ["b"]}}, "structured_outputs", "one constraint"),
    ({"structured_outputs": {"structural_tag": "x"}}, "structured_outputs", "structural_tag"),
    ({"response_format": {"type": "json_object"}, "structured_outputs": {"regex": "a"}}, "structured_outputs", "cannot both"),
    ({"response_format": {"type": "json_object"}, "tools": [WEATHER], "tool_choice": "required"}, "tool_choice", "cannot both"),
])
def test_what_the_backend_cannot_do_is_a_400_naming_it(server: str, body: dict, param: str, needle: str) -> None:
    r = httpx.post(server + "/v1/chat/completions", json={"model": "gk-tiny", "messages": [{"role": "user", "content": "x"}],
                                                          "max_tokens": 4, **body})
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["param"] == param and needle in err["message"] and err["type"] == "BadRequestError"


def test_the_backend_is_stated(server: str) -> None:
    assert httpx.get(server + "/version").json()["structured_outputs_backend"].startswith("llguidance ")


def test_strict_closes_unspecified_objects_only() -> None:
    s = strict({"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}},
                                                "c": {"type": "object", "additionalProperties": True}},
                "allOf": [{"type": "object", "properties": {"d": {}}}]})
    assert s["additionalProperties"] is False and s["properties"]["a"]["additionalProperties"] is False
    assert s["properties"]["c"]["additionalProperties"] is True and "additionalProperties" not in s["allOf"][0]


# The fault, at the engine and through the server.

def _mixed_batch(faults: tuple[str, ...]) -> tuple[str, str]:
    """A free request ahead of a constrained one in one batch: (free text, constrained text)."""
    llm = LLM(str(GK_TINY), profile="optimized", faults=faults)
    enc = llm.tokenizer.encode
    free, constrained = llm.generate([enc("Tell me a story"), enc("Weather in Paris as JSON:")],
                                     [SamplingParams(temperature=0, max_tokens=24),
                                      SamplingParams(temperature=0, max_tokens=64, grammar=GrammarSpec.json_schema(CITY))])
    return free.text, constrained.text


def test_misaligned_masks_break_constrained_and_free_requests_in_a_mixed_batch() -> None:
    good_free, good_json = _mixed_batch(())
    bad_free, bad_json = _mixed_batch(("grammar-mask-misalign",))
    jsonschema.validate(json.loads(good_json), CITY)
    with pytest.raises((json.JSONDecodeError, jsonschema.ValidationError)):
        jsonschema.validate(json.loads(bad_json), CITY)
    assert bad_free != good_free  # the free request got the constrained one's mask


def test_misaligned_masks_leave_a_single_request_alone() -> None:
    for faults in ((), ("grammar-mask-misalign",)):
        llm = LLM(str(GK_TINY), profile="optimized", faults=faults)
        out = llm.generate([llm.tokenizer.encode("Weather in Paris as JSON:")],
                           [SamplingParams(temperature=0, max_tokens=64, grammar=GrammarSpec.json_schema(CITY))])[0]
        jsonschema.validate(json.loads(out.text), CITY)


@pytest.mark.slow  # the engine-level and golden-gate tests cover the fault
def test_misaligned_masks_through_the_server_under_concurrency() -> None:
    """Constrained answers go wrong only when free requests share their batches."""
    async def run(url: str, concurrent: bool) -> list[str]:
        fmt = {"type": "json_schema", "json_schema": {"name": "w", "schema": CITY}}
        async with openai.AsyncOpenAI(base_url=url + "/v1", api_key="unused") as c:
            async def constrained(i: int) -> str:
                r = await c.chat.completions.create(model="gk-tiny", messages=[{"role": "user", "content": f"Weather {i} as JSON"}],
                                                    response_format=fmt, temperature=0, max_tokens=64)
                return r.choices[0].message.content or ""

            async def free(i: int) -> str:
                r = await c.chat.completions.create(model="gk-tiny", messages=[{"role": "user", "content": f"Story {i}"}],
                                                    temperature=0, max_tokens=48)
                return r.choices[0].message.content or ""
            if not concurrent:
                return [await constrained(i) for i in range(4)]
            results = await asyncio.gather(*(f(i) for i in range(4) for f in (free, constrained)))
            return list(results[1::2])

    def invalid(texts: list[str]) -> int:
        bad = 0
        for t in texts:
            try:
                jsonschema.validate(json.loads(t), CITY)
            except (json.JSONDecodeError, jsonschema.ValidationError):
                bad += 1
        return bad

    with running_server(GK_TINY, "--profile", "optimized", "--fault", "grammar-mask-misalign") as s:
        assert invalid(asyncio.run(run(s.url, concurrent=False))) == 0
        assert invalid(asyncio.run(run(s.url, concurrent=True))) > 0


CASES = "echo-words, json-enforced-1, eos-1, tool-required-1, code-1, json-enforced-2, echo-number, tool-required-2"


def _golden_run(tmp_path: Path, concurrency: int):
    policy = tmp_path / f"c{concurrency}.yaml"
    policy.write_text(f"version: 1\ngates:\n  golden:\n    cases: [{CASES}]\n    concurrency: {concurrency}\n")
    return gk_run(tmp_path / f"c{concurrency}", "--model", str(GK_TINY), "--candidate-fault", "grammar-mask-misalign",
                  "--gates", "startup,golden", "--policy", str(policy))


@pytest.mark.slow  # suite time; the selftest's grammar-mask-misalign cell runs it; engine- and server-level tests stay
def test_the_golden_gate_rolls_back_misaligned_masks_under_concurrency_only(tmp_path: Path) -> None:
    batched = _golden_run(tmp_path, 4)
    assert batched.summary["verdict"] == "ROLLBACK", batched.stderr
    failed = {c["id"] for g in batched.summary["gates"] for c in g["checks"] if c["status"] == "FAIL"}
    cases = {f"golden.{c.strip()}" for c in CASES.split(",")}
    assert failed & cases, failed  # the masks land on free cases or leave constrained ones bare: either shows
    alone = _golden_run(tmp_path, 1)
    assert alone.summary["verdict"] == "PROMOTE", [c for g in alone.summary["gates"] for c in g["checks"]
                                                   if c["status"] not in ("PASS", "SKIP")]
