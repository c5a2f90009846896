"""Gate 5's task success (traffic/task.py) and its rules: an answer that differs from the
reference's is `answers_differ`'s business, a lost task — broken JSON, no valid tool call, a new
refusal, not the expected answer — `task_success_down`'s; both compare the candidate with the
reference's own second run."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from gatekeeper.traffic.analysis import CRITICAL, Analysis, SliceKey, Thresholds
from gatekeeper.traffic.answers import Answer
from gatekeeper.traffic.measures import NEAR_TIE, Pair, measure, task_of, with_task
from gatekeeper.gates.shadow.review import ROW_COLUMNS, Review
from gatekeeper.traffic.rules import ANSWERS_DIFFER, MEASURES, PAIR_RULES, TASK_SUCCESS_DOWN, pair_rule
from gatekeeper.traffic.settings import ShadowSettings
from gatekeeper.traffic.task import Task, json_schema_of
from gatekeeper.stats.near_tie import first_divergence
from gatekeeper.endpoints.responses import ChatResponse, TokenLogprob
from gatekeeper.results import Status
from gatekeeper.traffic.format import parse_record

TOOLS = ({"type": "function", "function": {"name": "set_alarm", "parameters": {
    "type": "object", "properties": {"time": {"type": "string"}}, "required": ["time"]}}},)
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
CHAT = {"messages": [{"role": "user", "content": "x"}], "temperature": 0}


def _pair(cand: Answer, ref: Answer, twin: Answer, *, json_: bool = False, tools: tuple | None = None,
          schema: dict | None = None, expected: str | None = None) -> Pair:
    return Pair(id="r", tenant="t", kind="chat", model_alias="", wants_json=json_, tools=tools, candidate=cand, reference=ref, twin=twin,
                json_schema=schema, expected=expected)


def test_each_check_fails_what_it_says_and_a_failed_request_fails_them_all():
    task = Task(json=True, schema=SCHEMA, tools=TOOLS, answered=True, expected='{"n": 1}')
    assert task.checks == ("json", "tool_call", "refusal", "answer")
    assert task.failures(Answer(error="http: HTTP 503")) == task.checks
    assert Task(json=True, schema=SCHEMA).failures(Answer('{"n": "one"}')) == ("json",)  # parses, breaks the schema
    assert Task(json=True, schema=SCHEMA).failures(Answer('```json\n{"n": 2}\n```')) == ()  # a fence is fine
    assert Task(json=True).failures(Answer('{"n": 2')) == ("json",)
    assert Task(tools=TOOLS).failures(Answer("", (("set_alarm", '{"time": "7:30"}'),))) == ()
    for bad in (Answer("I will set it."), Answer("", (("other", "{}"),)), Answer("", (("set_alarm", "{}"),)),
                Answer("", (("set_alarm", '"7:30"'),))):
        assert Task(tools=TOOLS).failures(bad) == ("tool_call",), bad
    assert Task(answered=True).failures(Answer("I'm sorry, I can't help with that.")) == ("refusal",)
    assert Task(answered=True).failures(Answer("", (("set_alarm", "{}"),))) == ()  # a call is no refusal
    assert Task(expected="23").failures(Answer(" 23\n")) == () and Task(expected="23").failures(Answer("24")) == ("answer",)
    assert Task().checks == () and Task().failures(Answer(error="timeout")) == ()


def test_an_answer_that_differs_is_not_a_lost_task_and_a_lost_task_is_counted_on_both_sides():
    ref = Answer('{"n": 1}', finish_reason="stop")
    other = measure(_pair(Answer('{"n": 2}'), ref, ref, json_=True, schema=SCHEMA))
    assert other.bad["disagreement"] == (True, False) and other.bad["task_failure"] == (False, False)
    broken = measure(_pair(Answer('{"n": "two"}'), ref, Answer('{"n'), json_=True, schema=SCHEMA))
    assert broken.bad["task_failure"] == (True, True) and broken.task == (("json",), ("json",))
    assert broken.bad["json_parse"] == (True, True)  # the schema breaks the structure too
    wrong = measure(_pair(Answer("24"), Answer("23"), Answer("23"), expected="23"))
    assert wrong.bad["task_failure"] == (True, False) and wrong.task == (("answer",), ())
    # The reference refused: a refusal is no lost task, but the expected answer still is.
    refusing = Answer("I can't help with that.")
    m = measure(_pair(Answer("Sure: ..."), refusing, refusing, expected="I can't help with that."))
    assert m.task == (("answer",), ()) and "refusal" not in m.bad
    assert task_of(_pair(refusing, refusing, refusing)).checks == ()
    assert "task_failure" not in measure(_pair(refusing, refusing, refusing)).bad  # nothing to check: not eligible


def test_a_tool_call_is_expected_only_where_the_reference_made_one():
    call = Answer("", (("set_alarm", '{"time": "7:30"}'),), "tool_calls")
    text = Answer("Done.", (), "stop")
    assert measure(_pair(text, call, call, tools=TOOLS)).task == (("tool_call",), ())
    assert measure(_pair(call, text, text, tools=TOOLS)).bad["task_failure"] == (False, False)


def test_a_near_tie_forgives_the_difference_never_the_lost_task():
    p = replace(_pair(Answer("24"), Answer("23"), Answer("23"), expected="23"), reviewed=NEAR_TIE)
    m = measure(p)
    assert m.bad["disagreement"] == (False, False) and m.bad["task_failure"] == (True, False)


def test_the_twin_is_forgiven_by_the_same_rule_and_near_ties_are_counted_on_both_sides():
    ref = Answer("23")
    p = replace(_pair(Answer("24"), ref, Answer("25")), reviewed=NEAR_TIE, twin_reviewed=NEAR_TIE)
    m = measure(p)
    assert m.bad["disagreement"] == (False, False) and m.bad["near_tie"] == (True, True)
    assert Pair.from_dict(json.loads(json.dumps(p.to_dict()))) == p
    unforgiven = measure(replace(p, twin_reviewed=None))
    assert unforgiven.bad["disagreement"] == (False, True) and unforgiven.bad["near_tie"] == (True, False)
    assert "near_tie" not in measure(replace(p, sampled=True)).bad  # only greedy answers are reviewed


def test_each_near_tie_is_forgiven_but_a_systematic_rate_of_them_fires():
    """A kernel shifting every close call toward the runner-up parts at a near tie on most
    answers: each one forgiven, the rate beyond the twin's and its materiality fires
    answers_differ; a declared bf16 build's ~5% is within the 10-point materiality."""
    ref = Answer("23")

    def pairs(every: int, n: int = 400) -> list[Pair]:  # a near tie every `every` pairs
        return [replace(_pair(Answer("24") if i % every == 0 else ref, ref, ref), reviewed=NEAR_TIE if i % every == 0 else None)
                for i in range(n)]
    shifted = pair_rule(ANSWERS_DIFFER, _run(pairs(1)))
    assert shifted.status is Status.FAIL and f"near_tie ({MEASURES['near_tie']})" in shifted.reason, shifted.reason
    bf16 = pair_rule(ANSWERS_DIFFER, _run(pairs(20)))  # 5%
    assert bf16.status in (Status.PASS, Status.WARN) and not bf16.undecided, bf16.reason
    assert bf16.limit is not None and bf16.limit.effect <= 0.10


def test_the_record_gives_the_schema_and_the_expected_answer():
    fmt = {"type": "json_schema", "json_schema": {"name": "n", "schema": SCHEMA}}
    record = parse_record({"endpoint": "chat", "request": {**CHAT, "response_format": fmt}, "expected": '{"n": 1}'}, 1)
    p = with_task(_pair(Answer("{}"), Answer('{"n": 1}'), Answer('{"n": 1}'), json_=True), record)
    assert p.json_schema == SCHEMA and p.expected == '{"n": 1}' and json_schema_of(record.request) == SCHEMA
    assert Pair.from_dict(json.loads(json.dumps(p.to_dict()))) == p
    assert measure(p).task == (("json", "answer"), ())
    assert json_schema_of({"response_format": {"type": "json_object"}}) is None


def _run(pairs: list[Pair]) -> list:
    key = SliceKey("all", "")
    analysis = Analysis([(key, frozenset(CRITICAL))], Thresholds(alpha=0.05))
    for p in pairs:
        analysis.add(p, measure(p))
    return analysis.results()


def test_answers_differ_and_task_success_down_each_fire_on_their_own_measure():
    ref = Answer('{"n": 1}', finish_reason="stop")
    differs = [_pair(Answer(f'{{"n": {i + 2}}}'), ref, ref, json_=True, schema=SCHEMA) for i in range(60)]
    slices = _run(differs)
    fired = pair_rule(ANSWERS_DIFFER, slices)
    assert fired.status is Status.FAIL and fired.reason.startswith(f"disagreement ({MEASURES['disagreement']}) in all")
    assert pair_rule(TASK_SUCCESS_DOWN, slices).status is Status.PASS  # valid JSON to the schema: no task lost
    lost = [_pair(Answer("24"), Answer("23"), Answer("23"), expected="23") for _ in range(20)]
    same = [_pair(Answer("23"), Answer("23"), Answer("23"), expected="23") for _ in range(40)]
    slices = _run([p for pair in zip(lost, same[:20]) for p in pair] + same[20:])
    rule = pair_rule(TASK_SUCCESS_DOWN, slices)
    assert rule.status is Status.FAIL and "task_failure (requests whose checkable outcome failed)" in rule.reason
    assert PAIR_RULES[TASK_SUCCESS_DOWN] == ("task_failure",) and PAIR_RULES[ANSWERS_DIFFER] == ("disagreement", "near_tie")


def test_a_task_rule_with_nothing_to_check_is_a_skip_saying_so():
    refusing = Answer("I can't help with that.")
    rule = pair_rule(TASK_SUCCESS_DOWN, _run([_pair(refusing, refusing, refusing)] * 5))
    assert rule.status is Status.SKIP and "no judged request had a checkable outcome" in rule.reason


def test_the_near_tie_gap_is_the_policy_setting_for_the_declared_dtype():
    s = ShadowSettings()
    assert s.gap("bfloat16") == 1.0 and s.gap("float32") == 0.05 and s.gap("fp8-unknown") == 0.05
    assert ShadowSettings(near_tie_gap={"float32": 0.1, "bfloat16": 2.0}).gap("bfloat16") == 2.0
    with pytest.raises(ValueError, match="float32 at least"):
        ShadowSettings(near_tie_gap={"bfloat16": 1.0})


def test_a_confident_divergence_is_shown_with_both_sides_top_tokens_and_logprobs():
    ref = ChatResponse(text="Paris", tool_calls=(), finish_reason="stop", logprobs=(TokenLogprob("Paris", -0.05, {"Paris": -0.05,
                                                                                                                  "Lyon": -3.2}),))
    cand = ChatResponse(text="Rome", tool_calls=(), finish_reason="stop", logprobs=(TokenLogprob("Rome", -0.4, {"Rome": -0.4,
                                                                                                                "Paris": -2.9}),))
    d = first_divergence(ref, cand, 1.0)
    assert d is not None and not d.tie
    record = parse_record({"endpoint": "chat", "id": "req-7", "tenant": "agents", "request": CHAT}, 1)
    row = dict(zip(ROW_COLUMNS, Review(None, "a confident divergence", d, 1.0).row(record)))
    assert row["request"] == "req-7" and row["token"] == "0"
    assert row["reference"] == "'Paris' (-0.050)" and row["candidate"] == "'Rome' (-0.400)"
    assert row["reference top-k"] == "'Paris' -0.050, 'Lyon' -3.200"
    assert row["reference gap"] == "not in top-k" and row["candidate gap"] == "2.500" and row["near-tie gap"] == "1"


def test_the_pair_rules_read_the_same_from_the_critical_measures_alone():
    """The extension asks after every chunk whether a rule is still undecided; it reads the
    critical measures alone (no fixed-horizon test), which must decide the rules as the full results do."""
    from gatekeeper.traffic.rules import undecided

    ref = Answer('{"n": 1}')
    pairs = [_pair(Answer('{"n": 2}') if i % 25 == 0 else ref, ref, ref, json_=True, schema=SCHEMA) for i in range(120)]
    key = SliceKey("all", "")
    analysis = Analysis([(key, frozenset(CRITICAL))], Thresholds(alpha=0.05))
    for p in pairs:
        analysis.add(p, measure(p))
    full, cheap = analysis.results(), analysis.results(critical_only=True)
    assert {m.name for m in cheap[0].metrics} == set(CRITICAL)
    for name in PAIR_RULES:
        assert pair_rule(name, cheap) == pair_rule(name, full), name
    assert undecided(cheap) == undecided(full) != []
