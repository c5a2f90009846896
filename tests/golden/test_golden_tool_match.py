"""The BFCL-style tool-call matcher: names, required and undeclared arguments, types, enums,
expected and allowed values, and order-free pairing of parallel calls."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gatekeeper.golden.tool_match import ActualCall, ExpectedCall, match_calls, type_ok, values_equal

TOOLS = [
    {"type": "function", "function": {"name": "set_alarm", "parameters": {"type": "object", "properties": {
        "hour": {"type": "integer"}, "minute": {"type": "integer"}, "repeat": {"type": "boolean"}},
        "required": ["hour", "minute", "repeat"]}}},
    {"type": "function", "function": {"name": "convert_currency", "parameters": {"type": "object", "properties": {
        "amount": {"type": "number"}, "from_currency": {"type": "string", "enum": ["USD", "EUR"]},
        "to_currency": {"type": "string", "enum": ["USD", "EUR"]}}, "required": ["amount", "from_currency", "to_currency"]}}},
    {"type": "function", "function": {"name": "add_tags", "parameters": {"type": "object", "properties": {
        "item_id": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["item_id", "tags"]}}},
]
ALARM = {"hour": 7, "minute": 30, "repeat": True}
MONEY = {"amount": 12.5, "from_currency": "USD", "to_currency": "EUR"}
TAGS = {"item_id": 42, "tags": ["red", "otter"]}


def problems(args: dict, expected: ExpectedCall) -> str:
    result = match_calls([ActualCall(expected.name, args)], [expected], TOOLS)
    assert not result.ok
    return " | ".join(result.problems)


def test_exact_match_with_every_argument_type():
    calls = [ActualCall("set_alarm", ALARM), ActualCall("convert_currency", MONEY), ActualCall("add_tags", TAGS)]
    expected = [ExpectedCall("set_alarm", ALARM), ExpectedCall("convert_currency", MONEY), ExpectedCall("add_tags", TAGS)]
    assert match_calls(calls, expected, TOOLS).ok


def test_parallel_calls_match_in_any_order_unless_ordered():
    calls = [ActualCall("add_tags", TAGS), ActualCall("set_alarm", ALARM)]
    expected = [ExpectedCall("set_alarm", ALARM), ExpectedCall("add_tags", TAGS)]
    result = match_calls(calls, expected, TOOLS)
    assert result.ok and result.pairs == ((0, 1), (1, 0))
    assert not match_calls(calls, expected, TOOLS, ordered=True).ok


def test_two_calls_to_one_function_pair_one_to_one():
    a, b = dict(ALARM), {**ALARM, "hour": 8}
    expected = [ExpectedCall("set_alarm", a), ExpectedCall("set_alarm", b)]
    assert match_calls([ActualCall("set_alarm", b), ActualCall("set_alarm", a)], expected, TOOLS).ok
    twice = match_calls([ActualCall("set_alarm", a), ActualCall("set_alarm", a)], expected, TOOLS)
    assert not twice.ok and "'hour' = 7, expected 8" in " ".join(twice.problems)


def test_wrong_count_and_wrong_name():
    assert "expected 2 call(s), got 1" in match_calls([ActualCall("set_alarm", ALARM)],
                                                      [ExpectedCall("set_alarm"), ExpectedCall("add_tags")], TOOLS).problems[0]
    assert "got function 'add_tags'" in match_calls([ActualCall("add_tags", TAGS)], [ExpectedCall("set_alarm")], TOOLS).problems[0]


def test_missing_required_and_undeclared_arguments():
    assert "missing argument 'repeat'" in problems({"hour": 7, "minute": 30}, ExpectedCall("set_alarm"))
    assert "unexpected argument 'second'" in problems({**ALARM, "second": 0}, ExpectedCall("set_alarm"))
    loose = ExpectedCall("set_alarm", allow_extra_args=True)
    assert match_calls([ActualCall("set_alarm", {**ALARM, "second": 0})], [loose], TOOLS).ok


@pytest.mark.parametrize("args, words", [
    ({**ALARM, "hour": "7"}, "'hour' should be integer, got str"),
    ({**ALARM, "hour": 7.0}, "'hour' should be integer, got float"),  # BFCL: a float is not an integer
    ({**ALARM, "repeat": 1}, "'repeat' should be boolean, got int"),
])
def test_types_follow_the_declared_schema(args, words):
    assert words in problems(args, ExpectedCall("set_alarm"))


def test_int_is_accepted_where_a_number_is_declared_but_bool_is_not():
    assert match_calls([ActualCall("convert_currency", {**MONEY, "amount": 12})],
                       [ExpectedCall("convert_currency", {**MONEY, "amount": 12.0})], TOOLS).ok
    assert "should be number, got bool" in problems({**MONEY, "amount": True}, ExpectedCall("convert_currency"))


def test_enum_array_items_expected_and_allowed_values():
    assert "not one of the declared enum" in problems({**MONEY, "to_currency": "JPY"}, ExpectedCall("convert_currency"))
    assert "array of string" in problems({"item_id": 1, "tags": ["red", 3]}, ExpectedCall("add_tags"))
    assert "'amount' = 13.5, expected 12.5" in problems({**MONEY, "amount": 13.5}, ExpectedCall("convert_currency", MONEY))
    allowed = ExpectedCall("convert_currency", allowed={"amount": [12.5, 12.50001]})
    assert match_calls([ActualCall("convert_currency", MONEY)], [allowed], TOOLS).ok
    assert "is not one of [1, 2]" in problems(MONEY, ExpectedCall("convert_currency", allowed={"amount": [1, 2]}))


def test_array_values_compare_in_order():
    assert "expected ['otter', 'red']" in problems(TAGS, ExpectedCall("add_tags", {**TAGS, "tags": ["otter", "red"]}))


def test_case_types_apply_without_a_tool_schema():
    expected = ExpectedCall("lookup", types={"id": "integer"}, required=("id",))
    assert match_calls([ActualCall("lookup", {"id": 3})], [expected], None).ok
    result = match_calls([ActualCall("lookup", {"id": "3"})], [expected], None)
    assert not result.ok and "should be integer" in result.problems[0]


def test_arguments_that_are_not_an_object():
    assert "not a JSON object" in problems(None, ExpectedCall("set_alarm"))  # type: ignore[arg-type]


def test_type_ok_and_values_equal_keep_json_types_apart():
    assert type_ok(3, "number") and not type_ok(True, "integer") and type_ok(None, "null")
    assert values_equal(2, 2.0) and not values_equal(True, 1) and not values_equal("1", 1)
    assert values_equal({"a": [1, 2]}, {"a": [1.0, 2]}) and not values_equal([1, 2], [2, 1])
    with pytest.raises(ValueError):
        type_ok(1, "int")

_ARGS = st.dictionaries(st.sampled_from(["a", "b", "c"]),
                        st.one_of(st.integers(-5, 5), st.booleans(), st.text(max_size=3), st.lists(st.integers(0, 3), max_size=2)),
                        max_size=3)
_CALLS = st.lists(st.tuples(st.sampled_from(["f", "g"]), _ARGS), min_size=1, max_size=4)


@settings(max_examples=200, deadline=None)
@given(_CALLS, st.randoms())
def test_matching_is_order_free_and_exact(calls, rnd):
    """Any permutation of the expected calls matches; changing one argument value breaks it."""
    expected = [ExpectedCall(name, dict(args), allow_extra_args=True) for name, args in calls]
    actual = [ActualCall(name, dict(args)) for name, args in calls]
    rnd.shuffle(actual)
    assert match_calls(actual, expected).ok
    target = next((c for c in actual if c.arguments), None)
    if target is not None:
        key = sorted(target.arguments)[0]
        target.arguments[key] = ["changed"]  # a value no strategy draws
        assert not match_calls(actual, expected).ok
