"""Every golden assertion type: a case where it passes and one where it fails for the right reason."""

from __future__ import annotations

import pytest

from gatekeeper.golden.assertions import REGISTRY, SpecError, build_assertion, similarity
from gatekeeper.golden.degeneration import find_degeneration
from gatekeeper.endpoints.responses import ChatResponse, ToolCall

WEATHER = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
    "required": ["city", "unit"]}}}]


def reply(text: str = "", calls: tuple[ToolCall, ...] = (), finish: str = "stop", tokens: int | None = 3) -> ChatResponse:
    return ChatResponse(text=text, tool_calls=calls, finish_reason=finish, completion_tokens=tokens)


def check(spec: dict, response: ChatResponse, tools=None):
    return build_assertion(spec).check(response, tools)


def test_registry_has_every_documented_type():
    assert set(REGISTRY) == {"equals", "contains", "regex", "json_schema", "python_ast", "tool_call", "no_degeneration",
                             "finish_reason", "length", "refusal", "equals_reference", "similar_to_reference"}


def test_equals():
    assert check({"type": "equals", "value": "OK"}, reply(" OK\n")).ok
    out = check({"type": "equals", "value": "OK"}, reply("!!!!"))
    assert not out.ok and not out.hard and "expected exactly 'OK'" in out.reason
    assert not check({"type": "equals", "value": "OK", "strip": False}, reply(" OK")).ok
    assert check({"type": "equals", "value": "ok", "ignore_case": True}, reply("OK")).ok


def test_contains():
    assert check({"type": "contains", "value": ["def ", "return"]}, reply("def f(x):\n    return x")).ok
    out = check({"type": "contains", "value": ["def ", "return"]}, reply("def f(x): pass"))
    assert not out.ok and "'return'" in out.reason


def test_regex():
    assert check({"type": "regex", "pattern": r"\d+"}, reply("it is 42")).ok
    assert not check({"type": "regex", "pattern": r"\d+", "full": True}, reply("it is 42")).ok
    assert "does not match" in check({"type": "regex", "pattern": r"^\d+$"}, reply("forty-two")).reason


def test_json_schema_valid_violation_and_invalid_json():
    spec = {"type": "json_schema", "schema": {"type": "object", "properties": {"age": {"type": "integer", "const": 36}},
                                              "required": ["age"]}}
    assert check(spec, reply('{"age": 36}')).ok
    assert check(spec, reply('```json\n{"age": 36}\n```')).ok
    violation = check(spec, reply('{"age": "36"}'))
    assert not violation.ok and not violation.hard and "age" in violation.reason
    broken = check(spec, reply('{"age": 36'))
    assert not broken.ok and broken.hard and "not JSON" in broken.reason


def test_python_ast():
    assert check({"type": "python_ast", "defines": "add"}, reply("def add(a, b):\n    return a + b")).ok
    assert check({"type": "python_ast", "defines": "add"}, reply("Sure:\n```python\ndef add(a, b):\n    return a + b\n```\nDone.")).ok
    assert "not valid Python" in check({"type": "python_ast"}, reply("def add(a, b)\n    return a + b")).reason
    assert "not 'add'" in check({"type": "python_ast", "defines": "add"}, reply("def sub(a, b):\n    return a - b")).reason


def test_tool_call_matches_and_mismatches():
    spec = {"type": "tool_call", "calls": [{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}]}
    good = reply(calls=(ToolCall("get_weather", '{"unit": "celsius", "city": "Paris"}'),), finish="tool_calls")
    assert check(spec, good, WEATHER).ok
    wrong = reply(calls=(ToolCall("get_weather", '{"city": "Paris", "unit": "kelvin"}'),))
    out = check(spec, wrong, WEATHER)
    assert not out.ok and not out.hard and "enum" in out.reason and "'kelvin'" in out.reason
    broken = check(spec, reply(calls=(ToolCall("get_weather", '{"city": "Par'),)), WEATHER)
    assert not broken.ok and broken.hard and "not a JSON object" in broken.reason
    none = check(spec, reply("It is sunny."), WEATHER)
    assert not none.ok and "expected 1 call(s), got 0" in none.reason


def test_tool_call_empty_list_means_no_call():
    assert check({"type": "tool_call", "calls": []}, reply("It is 20 degrees.")).ok
    assert not check({"type": "tool_call", "calls": []}, reply(calls=(ToolCall("get_weather", "{}"),))).ok


def test_tool_call_content_empty():
    spec = {"type": "tool_call", "content": "empty", "calls": [{"name": "get_weather"}]}
    call = (ToolCall("get_weather", '{"city": "Paris", "unit": "celsius"}'),)
    assert check(spec, reply(calls=call), WEATHER).ok
    assert "text beside" in check(spec, reply("Let me check.", call), WEATHER).reason


def test_no_degeneration_kinds_and_healthy_outputs():
    spec = {"type": "no_degeneration"}
    assert check(spec, reply(", ".join(str(i) for i in range(1, 61)))).ok
    assert check(spec, reply("\n".join(str(i) for i in range(100, 40, -1)))).ok
    assert check(spec, reply(calls=(ToolCall("get_weather", "{}"),))).ok  # a tool call is not empty output
    for text, kind in (("", "empty"), ("OK\ufffd", "replacement_char"), ("!" * 17, "char_run"),
                       ("I think " + "the cat sat on the mat and " * 6, "looping_tail"),
                       ("a b c x a b c y a b c z a b c w a b c v", "repeated_ngram")):
        out = check(spec, reply(text))
        assert not out.ok and out.hard and f"({kind})" in out.reason, (text, out)
    assert check({"type": "no_degeneration", "allow_empty": True}, reply("")).ok


@pytest.mark.parametrize("text,flagged", [
    ("!" * 16, True),  # NaN logits under argmax at max_tokens 16: under max_char_run, still degenerate
    ("!!!!", True), ("  ????  ", True), ("the " * 8, True), ("a" * 8, True),
    ("!!!", False), ("OK", False), ("1111", False), ("no no no", False), ("OK!!!!", False),
])
def test_an_answer_that_is_one_symbol_or_word_repeated_is_degenerate(text: str, flagged: bool) -> None:
    found = find_degeneration(text)
    assert (found is not None and found.kind == "fill") is flagged, (text, found)
    assert find_degeneration("!" * 17).kind == "char_run"  # longer runs keep their own name


def test_degeneration_offsets_point_at_the_problem():
    found = find_degeneration("OK then!!!!!!!!!!!!!!!!!!!!")
    assert found is not None and found.kind == "char_run" and found.offset == 7


def test_finish_reason():
    assert check({"type": "finish_reason", "value": "stop"}, reply("OK")).ok
    out = check({"type": "finish_reason", "value": "stop"}, reply("OK and so on", finish="length"))
    assert not out.ok and "'length'" in out.reason
    assert check({"type": "finish_reason", "value": ["stop", "tool_calls"]}, reply(finish="tool_calls")).ok


def test_length_bounds():
    assert check({"type": "length", "max_chars": 4, "max_tokens": 8}, reply("OK", tokens=2)).ok
    assert "more than 4" in check({"type": "length", "max_chars": 4}, reply("OK OK OK")).reason
    assert "fewer than 10" in check({"type": "length", "min_chars": 10}, reply("short")).reason
    assert "more than 8" in check({"type": "length", "max_tokens": 8}, reply("OK", tokens=16)).reason
    assert "no completion_tokens" in check({"type": "length", "max_tokens": 8}, reply("OK", tokens=None)).reason


def test_refusal_and_over_refusal():
    assert check({"type": "refusal"}, reply("I can't help with that.")).ok
    assert check({"type": "refusal"}, reply("I’m sorry, but I cannot assist with this request.")).ok
    out = check({"type": "refusal"}, reply("Sure! Step one: ..."))
    assert not out.ok and "expected a refusal" in out.reason
    assert check({"type": "refusal", "expect": False}, reply("56")).ok
    assert not check({"type": "refusal", "expect": False}, reply("I can't help with that.")).ok


def test_equals_reference():
    a = build_assertion({"type": "equals_reference"})
    assert a.relative
    assert a.compare(reply("OK"), reply("OK "), 0.8).ok
    same_call = (ToolCall("f", '{"a": 1, "b": 2}'),)
    assert a.compare(reply(calls=same_call), reply(calls=(ToolCall("f", '{"b":2,"a":1}'),)), 0.8).ok
    out = a.compare(reply(calls=(ToolCall("f", '{"a": 1, "b": 3}'),)), reply(calls=same_call), 0.8)
    assert not out.ok and "differs from the reference" in out.reason
    assert not a.compare(reply(calls=(ToolCall("f", '{"a": true}'),)), reply(calls=(ToolCall("f", '{"a": 1}'),)), 0.8).ok


def test_similar_to_reference_threshold_from_gate_or_case():
    a = build_assertion({"type": "similar_to_reference"})
    ref = reply("def add(a, b):\n    return a + b")
    assert a.compare(reply("def add(x, y):\n    return x + y"), ref, 0.7).ok
    out = a.compare(reply("import os"), ref, 0.7)
    assert not out.ok and "< 0.700" in out.reason
    strict = build_assertion({"type": "similar_to_reference", "threshold": 1.0})
    assert not strict.compare(reply("def add(x, y):\n    return x + y"), ref, 0.1).ok
    assert similarity("", "") == 1.0


@pytest.mark.parametrize("spec, key, words", [
    ({"type": "nope"}, "type", "unknown assertion type 'nope'"),
    ({"type": "equals", "valeu": "OK"}, "valeu", "takes no parameter 'valeu'"),
    ({"type": "equals", "value": 3}, "value", "must be a string"),
    ({"type": "equals", "value": "OK", "strip": "yes please"}, "strip", "must be true or false"),
    ({"type": "regex", "pattern": "("}, "pattern", "not a valid regular expression"),
    ({"type": "json_schema", "schema": {"type": "objekt"}}, "schema", "not a valid JSON Schema"),
    ({"type": "tool_call", "calls": [{"arguments": {}}]}, "calls", "string `name`"),
    ({"type": "tool_call", "calls": [{"name": "f", "types": {"x": "int"}}]}, "calls", "unknown JSON type 'int'"),
    ({"type": "length"}, "type", "at least one bound"),
    ({"type": "similar_to_reference", "threshold": 1.5}, "threshold", "in [0, 1]"),
    ({"type": "no_degeneration", "max_char_run": 0}, "max_char_run", "positive integer"),
    ("equals", None, "must be a mapping"),
])
def test_bad_specs_raise_spec_error_naming_the_key(spec, key, words):
    with pytest.raises(SpecError) as e:
        build_assertion(spec)
    assert e.value.key == key and words in str(e.value)
