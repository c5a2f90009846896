"""Golden-set loading: the shipped core set, and errors that name file, line and key."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections import Counter

import pytest

from gatekeeper.errors import ConfigError
from gatekeeper.golden import load_golden_set, parse_golden_set
from gatekeeper.golden.baseline import (
    FORMAT,
    load_baseline,
    response_from_dict,
    response_to_dict,
)
from gatekeeper.endpoints.responses import ChatResponse, ToolCall
from paths import ROOT

CORE = ROOT / "golden_sets" / "core.yaml"

GOOD = """\
version: "1.0"
cases:
  - id: canary
    family: short_answer
    messages:
      - {role: user, content: "Reply with exactly: OK"}
    max_tokens: 8
    assert:
      - {type: equals, value: OK}
      - {type: finish_reason, value: stop}
"""


def test_core_set_loads_with_every_family_and_enough_cases():
    gs = load_golden_set(CORE)
    assert gs.name == "core" and gs.version
    families = Counter(c.family for c in gs.cases)
    assert len(gs.cases) >= 40
    assert set(families) >= {"short_answer", "code", "multilingual", "degeneration", "eos", "long_output", "json",
                             "tool_call", "refusal"}
    assert gs.case("canary-ok").prompt_text == "Reply with exactly: OK"
    streamed = {c.family for c in gs.cases if c.stream_variant}
    assert streamed == {"tool_call", "json", "tool_enforced", "json_enforced"}
    assert all(c.expects_json for c in gs.cases if c.family in ("json", "json_enforced"))
    enforced = [c for c in gs.cases if c.family.endswith("_enforced")]
    assert enforced and all(c.response_format or c.tool_choice == "required" for c in enforced)


def test_a_bad_response_format_is_named_with_its_line(tmp_path):
    bad = tmp_path / "g.yaml"
    bad.write_text("version: 1\ncases:\n- id: a\n  family: f\n  messages: [{role: user, content: hi}]\n"
                   "  response_format: {type: yaml}\n  assert: [{type: equals, value: x}]\n")
    with pytest.raises(ConfigError) as e:
        load_golden_set(bad)
    assert e.value.line == 6 and "response_format" in str(e.value)


def test_core_yaml_is_what_the_script_writes(tmp_path):
    """core.yaml is generated; the script also checks that every trained answer passes its case."""
    out = tmp_path / "core.yaml"
    subprocess.run([sys.executable, "scripts/make_golden.py", "--out", str(out)], cwd=ROOT, check=True, capture_output=True)
    assert out.read_text(encoding="utf-8") == CORE.read_text(encoding="utf-8")


def test_core_set_covers_the_tool_call_shapes():
    gs = load_golden_set(CORE)
    kinds = set()
    for c in gs.cases:
        for a in c.assertions:
            if a.type == "tool_call":
                n = len(a.calls)  # type: ignore[attr-defined]
                kinds.add("none" if n == 0 else "single" if n == 1 else "parallel")
                for call in a.calls:  # type: ignore[attr-defined]
                    kinds.update(type(v).__name__ for v in call["arguments"].values())
        if any(m["role"] == "tool" for m in c.messages):
            kinds.add("tool_result")
    assert kinds >= {"single", "parallel", "none", "tool_result", "str", "int", "float", "bool", "list"}


def test_core_code_answers_would_parse():
    """The code cases' prompts ask for code; their assertion names the function the prompt asks for."""
    gs = load_golden_set(CORE)
    for c in (c for c in gs.cases if c.family == "code"):
        name = next(a.defines for a in c.assertions if a.type == "python_ast")  # type: ignore[attr-defined]
        assert f"named {name} " in c.prompt_text
        ast.parse(f"def {name}(x):\n    return x")


def test_a_minimal_set_parses():
    gs = parse_golden_set(GOOD, "mini.yaml")
    assert gs.name == "mini" and gs.cases[0].max_tokens == 8 and gs.cases[0].line == 3


def _error(text: str) -> ConfigError:
    with pytest.raises(ConfigError) as e:
        parse_golden_set(text, "sets/bad.yaml")
    return e.value


@pytest.mark.parametrize("old, new, line, key, words", [
    ("{type: equals, value: OK}", "{type: equalz, value: OK}", 9, "cases[0].assert[0].type", "unknown assertion type 'equalz'"),
    ("{type: finish_reason, value: stop}", "{type: finish_reason, valu: stop}", 10, "cases[0].assert[1].valu", "no parameter 'valu'"),
    ("max_tokens: 8", "max_tokens: many", 7, "cases[0].max_tokens", "positive integer"),
    ("    family: short_answer\n", "    family: short_answer\n    colour: red\n", 5, "cases[0].colour", "unknown case key"),
    ("{role: user,", "{role: robot,", 6, "cases[0].messages[0].role", "role in"),
    ('version: "1.0"\n', "", 1, "version", "needs a `version`"),
])
def test_errors_name_file_line_and_key(old, new, line, key, words):
    err = _error(GOOD.replace(old, new))
    assert (err.path, err.line, err.key) == ("sets/bad.yaml", line, key)
    assert str(err).startswith(f"sets/bad.yaml:{line}: {key}: ") and words in str(err)


def test_duplicate_ids_point_at_the_second():
    doubled = GOOD + GOOD.split("cases:\n", 1)[1]
    err = _error(doubled)
    assert err.line == 11 and err.key == "cases[1].id" and "first at line 3" in str(err)


def test_a_case_missing_assert_and_broken_yaml():
    err = _error(GOOD.split("    assert:")[0])
    assert err.line == 3 and "missing `assert`" in str(err)
    err = _error(GOOD.replace("{role: user,", "{role: user"))
    assert err.path == "sets/bad.yaml" and err.line is not None and "invalid YAML" in str(err)


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError) as e:
        load_golden_set(tmp_path / "nope.yaml")
    assert "nope.yaml" in str(e.value)


def test_baseline_round_trip_and_bad_files(tmp_path):
    r = ChatResponse(text="", tool_calls=(ToolCall("f", '{"a": 1}', "call_1"),), finish_reason="tool_calls",
                     prompt_tokens=5, completion_tokens=9)
    assert response_from_dict(json.loads(json.dumps(response_to_dict(r)))) == r
    good = tmp_path / "b.jsonl"
    good.write_text("\n".join(json.dumps(x) for x in (
        {"format": FORMAT, "golden_set": "core", "version": "1.0", "model": "m"},
        {"case": "c1", "answers": [response_to_dict(r), response_to_dict(r)], "stream": response_to_dict(r), "error": None},
        {"case": "c2", "answers": [], "stream": None, "error": "timeout"})) + "\n")
    b = load_baseline(good)
    assert b.answers["c1"] == (r, r) and b.stream["c1"].streamed and b.errors == {"c2": "timeout"}
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"format": FORMAT}) + "\n" + json.dumps({"case": "c1", "answers": [{"txt": ""}]}) + "\n")
    with pytest.raises(ConfigError) as e:
        load_baseline(bad)
    assert e.value.line == 2
    bad.write_text('{"hello": 1}\n')
    with pytest.raises(ConfigError) as e:
        load_baseline(bad)
    assert e.value.line == 1 and "not a golden baseline" in str(e.value)


def _policy(tmp_path, golden_section: str):
    from gatekeeper.config.policy import load_policy
    from gatekeeper.gates.registry import settings_types

    path = tmp_path / "gates.yaml"
    path.write_text(f"version: 1\ngates:\n  golden:\n{golden_section}")
    return load_policy(path, settings_types())


def test_case_globs_choose_a_subset_and_a_typo_is_a_config_error(tmp_path):
    from gatekeeper.gates.golden.gate import GoldenGate
    from gatekeeper.golden.case_selection import named_cases, select_cases
    from gatekeeper.run_plan import RunPlan
    from gatekeeper.targets.interface import TargetSpec

    core = (load_golden_set(CORE),)
    chosen = [name for name, _ in select_cases(named_cases(core), ["canary-ok", "tool-parallel-*"])]
    assert chosen == ["canary-ok", "tool-parallel-2", "tool-parallel-3"]
    policy = _policy(tmp_path, '    cases: ["canary-ok", "tool-paralel-*"]\n')
    plan = RunPlan(TargetSpec("bundled"), TargetSpec("bundled"), policy, core, (), tmp_path, "run")
    with pytest.raises(ConfigError, match=r"gates.yaml:4: gates.golden.cases: 'tool-paralel-\*' matches no golden case"):
        GoldenGate.validate(policy.settings("golden"), plan)
    with pytest.raises(ConfigError, match=r"gates.yaml:4: gates.golden.cases: must be a list"):
        _policy(tmp_path, "    cases: canary-ok\n")
    with pytest.raises(ConfigError, match=r"gates.yaml:4: gates.golden.shared_hard_failures: must be FAIL or WARN"):
        _policy(tmp_path, "    shared_hard_failures: maybe\n")


def test_the_smoke_policy_subset_names_real_cases_in_every_family():
    from gatekeeper.config.policy import load_policy
    from gatekeeper.golden.case_selection import named_cases, select_cases
    from gatekeeper.gates.registry import settings_types

    core = [load_golden_set(CORE)]
    smoke = load_policy(ROOT / "gates" / "smoke.yaml", settings_types()).settings("golden")
    chosen = select_cases(named_cases(core), smoke.cases)
    # gk-tiny fails every long-output case (it overshoots the end), so smoke.yaml leaves them out.
    assert {c.family for _, c in chosen} == {c.family for c in core[0].cases} - {"long_output"}
    assert len(chosen) < len(core[0].cases) / 2
