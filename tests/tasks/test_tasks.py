"""The task generators: deterministic under a seed, and every answer correct by construction."""

from __future__ import annotations

import ast
import json
import random
import re

import pytest

from gatekeeper import tasks
from gatekeeper.tasks import multi_turn, multilingual, refusal, tool_call

N = 200


def _samples(family: str, seed: int = 0, n: int = N, **kw) -> list[tasks.Sample]:
    rng = random.Random(seed)
    return [tasks.generate(family, rng, **kw) for _ in range(n)]


def _user_text(s: tasks.Sample) -> str:
    return "\n".join(m["content"] for m in s.messages if m["role"] in ("user", "system"))


@pytest.mark.parametrize("family", tasks.FAMILIES)
def test_same_seed_same_samples(family):
    a, b = _samples(family, seed=7, n=30), _samples(family, seed=7, n=30)
    assert [(s.messages, s.tools, s.answer, s.meta) for s in a] == [(s.messages, s.tools, s.answer, s.meta) for s in b]
    assert a != _samples(family, seed=8, n=30)


@pytest.mark.parametrize("family", tasks.FAMILIES)
def test_answer_scores_and_wrong_answer_does_not(family):
    for s in _samples(family):
        assert s.family == family
        assert s.messages[-1]["role"] in ("user", "tool")
        assert tasks.score(s, s.answer)
        assert not tasks.score(s, s.answer + " 7x")
        assert not tasks.score(s, "")


def test_unknown_family_is_loud():
    with pytest.raises(tasks.UnknownFamilyError):
        tasks.generate("poetry", random.Random(0))


def test_echo_answer_is_the_requested_text():
    for s in _samples("echo"):
        assert _user_text(s).endswith(": " + s.answer)


def test_arithmetic_answers_are_right():
    for s in _samples("arithmetic", n=500):
        a, op, b = re.search(r"(\d+) ([-+*]) (\d+)", _user_text(s)).groups()
        assert int(s.answer) == {"+": int(a) + int(b), "-": int(a) - int(b), "*": int(a) * int(b)}[op]
        assert int(s.answer) >= 0


def test_json_answer_holds_exactly_the_stated_facts():
    for s in _samples("json"):
        obj = json.loads(s.answer)
        facts = _user_text(s).split("\n")[0]
        assert len(obj) == s.meta["num_fields"]
        for k, v in obj.items():
            said = {True: "true", False: "false"}.get(v, str(v)) if isinstance(v, bool) else str(v)
            assert f"{k} is {said}" in facts
        if s.meta["schema"]:
            schema = json.loads(_user_text(s).split("JSON schema: ")[1])
            assert list(obj) == list(schema["properties"])


def test_tool_calls_use_offered_tools_and_arguments_from_the_request():
    for s in _samples("tool_call", n=300):
        offered = {t["function"]["name"]: t["function"]["parameters"] for t in s.tools}
        request = next(m["content"] for m in s.messages if m["role"] == "user")
        for call in s.meta["calls"]:
            params = offered[call["name"]]
            assert set(call["arguments"]) == set(params["required"])
            for key, value in call["arguments"].items():
                spec = params["properties"][key]
                if "enum" in spec:
                    assert value in spec["enum"]
                for item in value if isinstance(value, list) else [value]:
                    if not isinstance(item, bool):
                        assert str(item) in request
        if s.meta["with_result"]:
            assert s.messages[-1]["role"] == "tool" and "<tool_call>" not in s.answer
        else:
            assert tool_call.parse_calls(s.answer) == s.meta["calls"]


def test_needle_is_planted_once_at_its_depth():
    for s in _samples("needle", n=50):
        text = _user_text(s)
        sentence = f"The secret {s.meta['kind']} is {s.answer}."
        assert text.count(sentence) == 1 and text.count("secret") == 2
        pos = text.index(sentence) / max(1, len(text))
        assert abs(pos - s.meta["depth"]) < 0.2 or len(text) < 400


def test_needle_length_follows_the_token_counter():
    count = lambda t: len(t.split())  # noqa: E731 - any counter will do
    for length in (100, 1000):
        s = tasks.generate("needle", random.Random(1), context_tokens=length, count_tokens=count)
        assert length - 80 <= count(_user_text(s)) <= length


def test_multi_turn_answer_was_stated_in_an_earlier_round():
    for s in _samples("multi_turn"):
        users = [m["content"] for m in s.messages if m["role"] == "user"]
        assert len(users) == s.meta["round"]
        assert s.meta["slot"] in users[-1]
        stated = users[s.meta["fact_round"] - 1]
        assert stated == multi_turn.FACTS[s.meta["slot"]][0].format(v=s.answer)
        assert sum(s.answer in u for u in users[:-1]) >= 1
    rounds = {len([m for m in s.messages if m["role"] == "user"]) for s in _samples("multi_turn", rounds=12, n=5)}
    assert rounds == {12}


def test_long_output_counts_consecutively():
    for s in _samples("long_output"):
        nums = [int(x) for x in re.split(r", |\n", s.answer)]
        assert len(nums) == s.meta["count"]
        step = 1 if "down" not in _user_text(s) else -1
        assert nums == list(range(nums[0], nums[0] + step * len(nums), step))


def test_code_answer_parses_and_does_what_was_asked():
    for s in _samples("code"):
        tree = ast.parse(s.answer)
        fn = tree.body[0]
        assert isinstance(fn, ast.FunctionDef) and fn.name == s.meta["name"]
        env: dict = {}
        exec(compile(tree, "<answer>", "exec"), env)  # noqa: S102 - our own generated template
        f = env[fn.name]
        text = _user_text(s)
        if "sum" in text:
            assert f(2, 5) == 7
        elif "square" in text:
            assert f(4) == 16
        elif "length" in text:
            assert f([1, 2, 3]) == 3
    assert tasks.score(s, "```python\n" + s.answer + "\n```")


def test_multilingual_translations_come_from_the_dictionary():
    for s in _samples("multilingual"):
        if s.meta["mode"] == "translate":
            word = re.search(r'"(.+?)"', _user_text(s)).group(1)
            assert multilingual.DICTIONARY[word][s.meta["language"]] == s.answer
        else:
            assert _user_text(s) == "Reply with exactly: " + s.answer


def test_refusals_are_the_fixed_reply():
    assert {s.answer for s in _samples("refusal")} == {refusal.REFUSAL}


def test_eos_answers_are_one_short_word():
    for s in _samples("eos"):
        assert s.meta["needs_eos"] and " " not in s.answer and s.answer in _user_text(s)
