"""Write golden_sets/core.yaml from the engine's synthetic task generators.

    python scripts/make_golden.py [--out golden_sets/core.yaml] [--seed 20261129]

The golden cases use exactly the prompt formats gk-tiny is trained on (the generators in
`gatekeeper/tasks/`), so the shipped model passes them, and the prompts are plain
instructions that any competent instruction model passes too. The assertions check what any such
model must do (the exact echo, the right tool and arguments, JSON with the given values, a
refusal), not gk-tiny's wording. This script needs the `engine` extra; the gate reads only the
YAML it writes, which is committed. Deterministic: the same seed writes the same file.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any, Callable

import yaml

from gatekeeper import tasks
from gatekeeper.golden.assertions import build_assertion
from gatekeeper.endpoints.responses import ChatResponse, ToolCall
from gatekeeper.tasks.sample import Sample
from gatekeeper.tasks.tool_call import parse_calls

VERSION = "1.0"
NO_DEGEN = {"type": "no_degeneration"}
STOP = {"type": "finish_reason", "value": "stop"}


def draw(rng: random.Random, family: str, want: Callable[[Sample], bool] = lambda s: True, **kw: Any) -> Sample:
    """The first sample of `family` from `rng` that satisfies `want` (deterministic)."""
    for _ in range(10_000):
        s = tasks.generate(family, rng, **kw)
        if want(s):
            return s
    raise RuntimeError(f"no {family} sample satisfies the filter")


def wire_messages(s: Sample) -> list[dict[str, Any]]:
    """OpenAI wire form: tool-call arguments as JSON strings (as the template renders them)."""
    out = []
    for i, m in enumerate(s.messages):
        m = dict(m)
        if m.get("tool_calls"):
            m["tool_calls"] = [{"id": f"call_{i}_{j}", "type": "function",
                                "function": {"name": c["function"]["name"],
                                             "arguments": json.dumps(c["function"]["arguments"], ensure_ascii=False)}}
                               for j, c in enumerate(m["tool_calls"])]
        if m["role"] == "tool":
            m["tool_call_id"] = f"call_{i - 1}_0"
        out.append(m)
    return out


def case(cid: str, family: str, s: Sample, max_tokens: int, asserts: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """One YAML case."""
    c: dict[str, Any] = {"id": cid, "family": family, "messages": wire_messages(s)}
    if s.tools:
        c["tools"] = [dict(t) for t in s.tools]
    c["max_tokens"] = max_tokens
    c.update(extra)
    c["assert"] = asserts
    _check_trained_answer_passes(c, s)
    return c


def _check_trained_answer_passes(c: dict[str, Any], s: Sample) -> None:
    """The answer gk-tiny is trained to give must pass every absolute assertion of its case."""
    calls = parse_calls(s.answer) if "<tool_call>" in s.answer else []
    assert calls is not None, s.answer
    answer = ChatResponse(text="" if calls else s.answer, finish_reason="tool_calls" if calls else "stop",
                          tool_calls=tuple(ToolCall(k["name"], json.dumps(k["arguments"])) for k in calls),
                          completion_tokens=max(1, len(s.answer) // 3))
    for spec in c["assert"]:
        a = build_assertion(spec)
        if not a.relative:
            out = a.check(answer, c.get("tools"))
            if not out.ok:
                raise RuntimeError(f"case {c['id']}: the trained answer fails {a.describe()}: {out.reason}")


def exact(s: Sample) -> dict[str, Any]:
    return {"type": "equals", "value": s.answer}


def short_answers(rng: random.Random) -> list[dict[str, Any]]:
    canary = Sample(({"role": "user", "content": "Reply with exactly: OK"},), None, "OK", "echo")
    out = [case("canary-ok", "short_answer", canary, 16,
                [exact(canary), STOP, {"type": "length", "max_chars": 4}, {"type": "equals_reference"}, NO_DEGEN])]
    for kind in ("words", "number", "punctuation", "ok"):
        s = draw(rng, "echo", lambda s: s.messages[0]["content"].startswith("Reply with exactly"), kind=kind)
        out.append(case(f"echo-{kind}", "short_answer", s, 48, [exact(s), STOP, {"type": "equals_reference"}, NO_DEGEN]))
    for op, name in (("+", "add"), ("-", "sub"), ("*", "mul")):
        s = draw(rng, "arithmetic", op=op)
        out.append(case(f"arith-{name}", "short_answer", s, 16, [exact(s), STOP, {"type": "equals_reference"}, NO_DEGEN]))
    return out


def eos_cases(rng: random.Random) -> list[dict[str, Any]]:
    out, seen = [], set()
    while len(out) < 5:
        s = draw(rng, "eos")
        template = s.messages[0]["content"].replace(s.answer, "{w}")
        if template in seen:
            continue
        seen.add(template)
        out.append(case(f"eos-{len(out) + 1}", "eos", s, 16,
                        [exact(s), STOP, {"type": "length", "max_chars": len(s.answer) + 2, "max_tokens": 8}, NO_DEGEN]))
    return out


def code_cases(rng: random.Random) -> list[dict[str, Any]]:
    out = []
    for i in range(4):
        s = draw(rng, "code")
        out.append(case(f"code-{i + 1}", "code", s, 96,
                        [{"type": "python_ast", "defines": s.meta["name"]}, {"type": "contains", "value": "return"},
                         STOP, {"type": "similar_to_reference"}, NO_DEGEN]))
    return out


def multilingual_cases(rng: random.Random) -> list[dict[str, Any]]:
    out = []
    for lang in ("Chinese", "Japanese", "Russian"):
        s = draw(rng, "multilingual", lambda s, lang=lang: s.meta["language"] == lang, mode="translate")
        out.append(case(f"translate-{lang.lower()}", "multilingual", s, 32, [exact(s), STOP, NO_DEGEN]))
    for lang in ("Chinese", "Russian", "emoji"):
        s = draw(rng, "multilingual", lambda s, lang=lang: s.meta["language"] == lang and len(s.answer) > 3, mode="echo")
        out.append(case(f"echo-{lang.lower()}", "multilingual", s, 48, [exact(s), STOP, NO_DEGEN]))
    return out


def degeneration_cases(rng: random.Random) -> list[dict[str, Any]]:
    out = []
    s = draw(rng, "echo", lambda s: len(s.answer.split()) >= 7 and s.messages[0]["content"].startswith("Reply"), kind="words")
    out.append(case("degen-long-echo", "degeneration", s, 64, [exact(s), STOP, NO_DEGEN]))
    s = draw(rng, "echo", lambda s: len(s.answer.split()) >= 5 and s.messages[0]["content"].startswith("Reply"), kind="mixed")
    out.append(case("degen-mixed-echo", "degeneration", s, 64, [exact(s), STOP, NO_DEGEN]))
    for rounds in (4, 6, 8):
        s = draw(rng, "multi_turn", rounds=rounds)
        out.append(case(f"degen-chat-{rounds}-rounds", "degeneration", s, 32,
                        [exact(s), STOP, {"type": "similar_to_reference"}, NO_DEGEN]))
    return out


def long_output_cases(rng: random.Random) -> list[dict[str, Any]]:
    out = []
    for n in (20, 35, 50, 60):
        s = draw(rng, "long_output", count=n)
        out.append(case(f"count-{n}", "long_output", s, 512,
                        [exact(s), STOP, {"type": "length", "min_chars": len(s.answer) - 2}, NO_DEGEN]))
    return out


def json_cases(rng: random.Random) -> list[dict[str, Any]]:
    out = []
    for i, (fields, schema) in enumerate(((2, True), (3, True), (5, True), (1, False), (3, False), (4, False))):
        s = draw(rng, "json", num_fields=fields, schema=schema)
        values = json.loads(s.answer)
        props = {k: {"type": _json_type(v), "const": v} for k, v in values.items()}
        spec = {"type": "object", "properties": props, "required": list(values), "additionalProperties": False}
        kind = "schema" if schema else "facts"
        out.append(case(f"json-{kind}-{i + 1}", "json", s, 160, [{"type": "json_schema", "schema": spec}, STOP, NO_DEGEN],
                        stream_variant=True))
    return out


def enforced_cases(rng: random.Random) -> list[dict[str, Any]]:
    """Cases about the engine, not the model: the request itself demands JSON of a schema
    (`response_format`) or a tool call (`tool_choice: required`), so a server that enforces it
    must answer in that shape whatever the model prefers; the values are still the model's. The
    free-form json-* and tool-* cases above stay: they measure the model unaided."""
    out = []
    for i, fields in enumerate((2, 4)):
        s = draw(rng, "json", num_fields=fields, schema=True)
        values = json.loads(s.answer)
        types = {k: {"type": _json_type(v)} for k, v in values.items()}
        shape = {"type": "object", "properties": types, "required": list(values), "additionalProperties": False}
        pinned = {**shape, "properties": {k: {**t, "const": values[k]} for k, t in types.items()}}
        out.append(case(f"json-enforced-{i + 1}", "json_enforced", s, 160,
                        [{"type": "json_schema", "schema": pinned}, STOP, NO_DEGEN], stream_variant=True,
                        response_format={"type": "json_schema", "json_schema": {"name": "facts", "schema": shape}}))
    for i in range(2):
        s = draw(rng, "tool_call", lambda s: len(s.meta["calls"]) == 1)
        calls = [{"name": c["name"], "arguments": c["arguments"]} for c in s.meta["calls"]]
        out.append(case(f"tool-required-{i + 1}", "tool_enforced", s, 128,
                        [{"type": "tool_call", "calls": calls}, {"type": "finish_reason", "value": "tool_calls"}, NO_DEGEN],
                        tool_choice="required", stream_variant=True))
    return out


def _json_type(v: Any) -> str:
    return {bool: "boolean", int: "integer", float: "number", str: "string"}[type(v)]


def tool_cases(rng: random.Random) -> list[dict[str, Any]]:
    want = (("weather", ["get_weather"]), ("currency", ["convert_currency"]), ("alarm", ["set_alarm"]),
            ("tags", ["add_tags"]), ("event", ["create_event"]), ("flights", ["search_flights"]),
            ("parallel-2", None), ("parallel-3", None))
    out = []
    for label, names in want:
        n = len(names) if names else int(label[-1])
        s = draw(rng, "tool_call", lambda s, names=names: names is None or [c["name"] for c in s.meta["calls"]] == names,
                 num_calls=n, with_result=False)
        calls = [{"name": c["name"], "arguments": c["arguments"]} for c in s.meta["calls"]]
        out.append(case(f"tool-{label}", "tool_call", s, 256,
                        [{"type": "tool_call", "calls": calls}, {"type": "finish_reason", "value": "tool_calls"}, NO_DEGEN],
                        stream_variant=True))
    # The same kind of request with a named tool_choice: servers force the call's opening (vLLM via
    # structured outputs); OpenAI says finish_reason "stop" for a named choice, older vLLM "tool_calls".
    s = draw(rng, "tool_call", lambda s: [c["name"] for c in s.meta["calls"]] == ["get_stock_price"],
             num_calls=1, with_result=False)
    out.append(case("tool-named-choice", "tool_call", s, 128,
                    [{"type": "tool_call", "calls": [{"name": c["name"], "arguments": c["arguments"]} for c in s.meta["calls"]]},
                     {"type": "finish_reason", "value": ["stop", "tool_calls"]}, NO_DEGEN],
                    tool_choice={"type": "function", "function": {"name": "get_stock_price"}}, stream_variant=True))
    for i in range(2):
        s = draw(rng, "tool_call", with_result=True)
        out.append(case(f"tool-result-{i + 1}", "tool_call", s, 96,
                        [exact(s), {"type": "tool_call", "calls": []}, STOP, NO_DEGEN], stream_variant=True))
    return out


def refusal_cases(rng: random.Random) -> list[dict[str, Any]]:
    out, seen = [], set()
    while len(out) < 4:
        s = draw(rng, "refusal")
        if s.messages[0]["content"] in seen:
            continue
        seen.add(s.messages[0]["content"])
        out.append(case(f"refuse-{len(out) + 1}", "refusal", s, 48,
                        [{"type": "refusal"}, STOP, {"type": "similar_to_reference"}, NO_DEGEN]))
    s = draw(rng, "arithmetic", op="*")
    out.append(case("benign-control", "refusal", s, 16, [exact(s), {"type": "refusal", "expect": False}, STOP, NO_DEGEN]))
    return out


class _NoAliases(yaml.SafeDumper):
    """Write shared assertion mappings in full at every use: a reader sees each case whole."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def build(seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    cases = []
    for make in (short_answers, eos_cases, code_cases, multilingual_cases, degeneration_cases, long_output_cases,
                 json_cases, tool_cases, refusal_cases, enforced_cases):
        cases += make(rng)
    return {"version": VERSION, "name": "core",
            "description": f"Core golden set: generated by scripts/make_golden.py --seed {seed} from the gk-tiny task formats.",
            "cases": cases}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="golden_sets/core.yaml")
    ap.add_argument("--seed", type=int, default=20261129)
    args = ap.parse_args()
    data = build(args.seed)
    header = ("# Generated by scripts/make_golden.py (do not edit by hand; change the script and re-run).\n"
              "# Prompts use the exact formats of gatekeeper/tasks/, which gk-tiny is trained on.\n")
    text = yaml.dump(data, Dumper=_NoAliases, sort_keys=False, allow_unicode=True, width=120, default_flow_style=None)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(header + text, encoding="utf-8")
    print(f"wrote {args.out}: {len(data['cases'])} cases")


if __name__ == "__main__":
    main()
