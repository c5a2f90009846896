"""Parallel tool calls in a side-by-side text: the same calls in another order show no difference
(both sides in canonical order, with a note saying so) in gate 1's, gate 4's and gate 5's text
pairs; a real difference among them still shows, and lone calls are shown as they came."""

from __future__ import annotations

from gatekeeper.endpoints.responses import ChatResponse, ToolCall
from gatekeeper.gates.longctx.tool_checks import _render_pair
from gatekeeper.gates.shadow.evidence import pair_evidence
from gatekeeper.golden.answer import render_answer, render_pair
from gatekeeper.golden.call_order import CANONICAL_NOTE, in_canonical_order
from gatekeeper.traffic.answers import Answer
from gatekeeper.traffic.measures import Pair, measure

WEATHER = ("get_weather", '{"city": "Paris", "unit": "C"}')
TIME = ("get_time", '{"city":"Paris"}')


def _chat(*calls: tuple[str, str], text: str = "") -> ChatResponse:
    return ChatResponse(text=text, tool_calls=tuple(ToolCall(n, a) for n, a in calls), finish_reason="tool_calls")


def test_sorted_by_name_then_by_canonical_arguments_when_both_sides_call_more_than_once():
    paris, lyon = ("f", '{"b": 1, "a": "Paris"}'), ("f", '{"a":"Lyon","b":1}')
    ref, cand, moved = in_canonical_order([paris, lyon, ("e", "not json")], [lyon, paris], lambda c: c)
    assert ref == [("e", "not json"), lyon, paris] and cand == [lyon, paris] and moved
    assert in_canonical_order([lyon, paris], [lyon, paris], lambda c: c) == ([lyon, paris], [lyon, paris], False)
    assert in_canonical_order([paris, lyon], [lyon], lambda c: c) == ([paris, lyon], [lyon], False)


def test_golden_pair_shows_a_pure_swap_as_no_difference():
    ref, cand = _chat(WEATHER, TIME, text="Checking."), _chat(TIME, WEATHER, text="Checking.")
    ref_text, cand_text = render_pair(ref, cand)
    assert ref_text == cand_text == ('Checking.\nget_time({"city": "Paris"})\n'
                                     'get_weather({"city": "Paris", "unit": "C"})\n' + CANONICAL_NOTE)
    assert render_answer(ref) != render_answer(cand)  # judging's rendering keeps each answer's own order
    other = _chat(TIME, ("get_weather", '{"city": "Lyon", "unit": "C"}'), text="Checking.")
    shown = render_pair(ref, other)
    assert shown[0] != shown[1] and shown[0].endswith(CANONICAL_NOTE) and shown[1].endswith(CANONICAL_NOTE)
    assert render_pair(_chat(WEATHER), _chat(TIME)) == (render_answer(_chat(WEATHER)), render_answer(_chat(TIME)))


def test_shadow_pair_evidence_shows_a_pure_swap_as_no_difference():
    ref, cand = Answer("", (WEATHER, TIME), "tool_calls", 20), Answer("", (TIME, WEATHER), "tool_calls", 20)
    pair = Pair(id="r1", tenant="support", kind="chat", model_alias="m", wants_json=False, tools=None, candidate=cand, reference=ref,
                twin=ref)
    ev = pair_evidence(pair, measure(pair))
    assert ev.reference == ev.candidate and ev.candidate.endswith(CANONICAL_NOTE) and ev.divergence is None
    assert ev.reference.splitlines()[0] == f"{TIME[0]}({TIME[1]})"


def test_longctx_stream_pair_shows_a_pure_swap_as_no_difference():
    plain, streamed = _chat(WEATHER, TIME), _chat(TIME, WEATHER)
    shown = _render_pair(plain, streamed)
    assert shown[0] == shown[1] and shown[0].endswith(CANONICAL_NOTE)
    in_order = _chat(TIME, WEATHER)
    assert _render_pair(in_order, in_order) == (_render_pair(in_order, _chat(WEATHER))[0],) * 2  # nothing moved: no note
