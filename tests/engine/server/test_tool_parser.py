"""The Hermes tool-call parser: non-streaming rules, chunking invariance of the streaming parser,
and the `tool-parser-partial` fault's broken streaming (with the non-streaming parse unaffected)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from gatekeeper.engine.server.tool_parser import (
    ContentDelta, FaultyStreamingToolParser, StreamingToolParser, ToolCallDelta, make_streaming_parser,
    parse_tool_calls,
)

WEATHER = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}</tool_call>'
ALARM = '<tool_call>{"name": "set_alarm", "arguments": {"time": "07:30", "days": ["monday", "friday"]}}</tool_call>'
TEXTS = [
    "Just an answer, no tools.",
    WEATHER,
    "Let me check.\n" + WEATHER,
    WEATHER + "\n" + ALARM,
    WEATHER + "\n" + ALARM + "\n",
    "a < b and <tool is not a tag",
    '<tool_call>{"name": broken json}</tool_call> then text',
    WEATHER + " and then some words",
    '<tool_call>{"name": "f", "arguments": {"x": 1}}',  # the model stopped before the end tag
    "<tool_call>{\"name\": \"f\", \"arguments\": {\"s\": \"</tool\"}}</tool_call>",
    "ends with a partial tag <tool_ca",
    '<tool_call>{"name": "f", "arguments": "{\\"x\\": 2}"}</tool_call>',  # arguments as a JSON string
    "unicode ünïcødé " + '<tool_call>{"name": "翻译", "arguments": {"text": "你好"}}</tool_call>',
    '<tool_call>{"name": "f", "arguments": {"s": "a</tool_call>b"}}</tool_call>',  # an end tag inside a string
    '<tool_call>{"name": "f", "arguments": {"s": "<tool_call>x</tool_call>"}}</tool_call>\n' + WEATHER,
    '<tool_call>{"name": bad</tool_call> text <tool_call>{"name": "f"}</tool_call>',  # a malformed block, then a call
]


def stream(text: str, pieces: list[int], parser=None) -> tuple[str, dict[int, dict]]:
    """Feed `text` cut at `pieces` offsets; return (content, {index: {id, name, arguments, names_seen}})."""
    parser = parser or StreamingToolParser()
    cuts = sorted({min(max(p, 0), len(text)) for p in pieces}) + [len(text)]
    deltas, start = [], 0
    for cut in cuts:
        deltas += parser.feed(text[start:cut])
        start = cut
    deltas += parser.finish()
    content, calls = "", {}
    for d in deltas:
        if isinstance(d, ContentDelta):
            content += d.text
        else:
            assert isinstance(d, ToolCallDelta)
            call = calls.setdefault(d.index, {"id": None, "name": None, "arguments": "", "names_seen": 0})
            if d.name is not None:
                call.update(id=d.id, name=d.name)
                call["names_seen"] += 1
            call["arguments"] += d.arguments
    return content, calls


def test_plain_text_is_content():
    assert parse_tool_calls("hello") == ("hello", [])


def test_single_call_parsed_with_arguments_as_json_string():
    content, calls = parse_tool_calls(WEATHER)
    assert content is None
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [("get_weather", {"city": "Paris", "unit": "celsius"})]
    assert len(calls[0].id) >= 9


def test_content_before_call_and_parallel_calls():
    content, calls = parse_tool_calls("Let me check.\n" + WEATHER + "\n" + ALARM + "\n")
    assert content == "Let me check.\n"
    assert [c.name for c in calls] == ["get_weather", "set_alarm"]
    assert len({c.id for c in calls}) == 2


def test_malformed_block_stays_content():
    text = '<tool_call>{"name": broken json}</tool_call>'
    assert parse_tool_calls(text) == (text, [])


def test_an_end_tag_inside_an_argument_string_does_not_end_the_call():
    content, calls = parse_tool_calls('<tool_call>{"name": "f", "arguments": {"s": "a</tool_call>b"}}</tool_call>')
    assert content is None and [(c.name, json.loads(c.arguments)) for c in calls] == [("f", {"s": "a</tool_call>b"})]
    content, calls = parse_tool_calls('<tool_call>{"name": bad</tool_call> text <tool_call>{"name": "f"}</tool_call>')
    assert content == '<tool_call>{"name": bad</tool_call> text ' and [c.name for c in calls] == ["f"]


def test_unterminated_block_is_parsed_if_complete_json():
    content, calls = parse_tool_calls('<tool_call>{"name": "f", "arguments": {"x": 1}}')
    assert content is None and calls[0].name == "f" and json.loads(calls[0].arguments) == {"x": 1}


def test_arguments_given_as_string_are_normalised():
    _, calls = parse_tool_calls('<tool_call>{"name": "f", "arguments": "{\\"x\\": 2}"}</tool_call>')
    assert json.loads(calls[0].arguments) == {"x": 2}


def test_partial_start_tag_held_back_then_released():
    p = StreamingToolParser()
    assert p.feed("see <tool_") == [ContentDelta("see ")]
    assert p.feed("ca") == []
    assert p.feed("t") == [ContentDelta("<tool_cat")]


def test_call_streams_name_once_then_arguments():
    p = StreamingToolParser()
    deltas = []
    for ch in WEATHER:
        deltas += p.feed(ch)
    deltas += p.finish()
    assert [type(d) for d in deltas] == [ToolCallDelta, ToolCallDelta]
    first, second = deltas
    assert first.name == "get_weather" and first.id and first.arguments == ""
    assert second.name is None and json.loads(second.arguments) == {"city": "Paris", "unit": "celsius"}


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(TEXTS), st.lists(st.integers(0, 200), max_size=30))
def test_streaming_equals_non_streaming_for_any_chunking(text, cuts):
    content, calls = stream(text, cuts)
    want_content, want_calls = parse_tool_calls(text)
    assert (content or None) == want_content
    assert [(c["name"], c["arguments"]) for c in calls.values()] == [(c.name, c.arguments) for c in want_calls]
    for c in calls.values():
        assert c["names_seen"] == 1 and len(c["id"]) >= 9
        json.loads(c["arguments"])


def test_token_by_token_stream_of_parallel_calls_gives_valid_json():
    text = "Sure.\n" + WEATHER + "\n" + ALARM
    content, calls = stream(text, list(range(len(text))))
    assert content == "Sure.\n"
    assert [json.loads(c["arguments"]) for c in calls.values()] == [
        {"city": "Paris", "unit": "celsius"}, {"time": "07:30", "days": ["monday", "friday"]}]


def test_fault_parser_is_selected_by_flag():
    assert isinstance(make_streaming_parser(True), FaultyStreamingToolParser)
    assert isinstance(make_streaming_parser(False), StreamingToolParser)


def test_fault_leaks_partial_delimiters_and_breaks_argument_json():
    text = "Sure.\n" + WEATHER
    content, calls = stream(text, list(range(len(text))), FaultyStreamingToolParser())
    assert "<tool" in content  # the head of the start tag went out as content
    assert calls and calls[0]["name"] == "get_weather"
    try:
        json.loads(calls[0]["arguments"])
        broken = False
    except json.JSONDecodeError:
        broken = True
    assert broken, calls[0]["arguments"]


def test_fault_only_bites_when_there_is_a_tool_call():
    text = "No tools here, just words."
    assert stream(text, list(range(len(text))), FaultyStreamingToolParser()) == stream(text, list(range(len(text))))


def test_fault_does_not_touch_non_streaming_parse():
    # non-streaming always uses the correct parser; the fault lives only in the streaming path
    _, calls = parse_tool_calls(WEATHER)
    assert json.loads(calls[0].arguments) == {"city": "Paris", "unit": "celsius"}
