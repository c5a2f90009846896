"""Order-free matching of tool calls against expectations, after BFCL's AST checker.

The Berkeley Function Calling Leaderboard judges a call by its structure, not its text: the
function name must match; every required parameter must be present and no undeclared one may
appear; each value must have the declared JSON type (an integer is accepted where a number is
declared, a float is not accepted where an integer is, and a boolean is never a number); and each
value must be one of the acceptable values. Parallel calls match in any order: each expected
call must pair with a distinct actual call. This module does the same, using both the case's
expectations and the tool's declared parameter schema (types, enums, required).

A match reports every problem found, so a failure says which argument of which call was wrong.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gatekeeper.endpoints.chat_types import ToolDefinition

_JSON_TYPES = ("string", "integer", "number", "boolean", "array", "object", "null")


@dataclass(frozen=True)
class ExpectedCall:
    """What one call must look like.

    `arguments`: exact values for the listed parameters; `allowed`: a list of acceptable values
    per parameter; `required`: parameters that must be present (besides the tool's own required
    list); `types`: JSON types per parameter (besides the tool's declared types);
    `allow_extra_args`: whether parameters neither expected nor declared may appear.
    """

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    allowed: dict[str, list[Any]] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    types: dict[str, str] = field(default_factory=dict)
    allow_extra_args: bool = False


@dataclass(frozen=True)
class ActualCall:
    """A call as the endpoint returned it: name and decoded arguments (None if not JSON)."""

    name: str
    arguments: Any


@dataclass(frozen=True)
class MatchResult:
    """`ok` when every expected call pairs with a distinct actual call; `problems` explains why not;
    `pairs` maps expected index -> actual index for the matching found."""

    ok: bool
    problems: tuple[str, ...]
    pairs: tuple[tuple[int, int], ...] = ()


def type_ok(value: Any, json_type: str) -> bool:
    """Whether a decoded JSON value has the JSON Schema type `json_type` (BFCL's rules)."""
    if json_type == "string":
        return isinstance(value, str)
    if json_type == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if json_type == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if json_type == "boolean":
        return isinstance(value, bool)
    if json_type == "array":
        return isinstance(value, list)
    if json_type == "object":
        return isinstance(value, dict)
    if json_type == "null":
        return value is None
    raise ValueError(f"unknown JSON type {json_type!r}; known: {', '.join(_JSON_TYPES)}")


def values_equal(got: Any, want: Any) -> bool:
    """Equality that keeps JSON types apart (True != 1) but lets 2 equal 2.0 for numbers."""
    if isinstance(got, bool) or isinstance(want, bool):
        return isinstance(got, bool) and isinstance(want, bool) and got == want
    if isinstance(got, (int, float)) and isinstance(want, (int, float)):
        return float(got) == float(want)
    if isinstance(got, list) and isinstance(want, list):
        return len(got) == len(want) and all(values_equal(g, w) for g, w in zip(got, want))
    if isinstance(got, dict) and isinstance(want, dict):
        return got.keys() == want.keys() and all(values_equal(got[k], want[k]) for k in want)
    return type(got) is type(want) and got == want


def tool_parameters(tools: Sequence[ToolDefinition] | None, name: str) -> dict[str, Any] | None:
    """The declared `parameters` schema of tool `name` in OpenAI-style definitions, or None."""
    for tool in tools or []:
        fn = tool["function"]
        if fn.get("name") == name:
            params = fn.get("parameters")
            return params if isinstance(params, dict) else {}
    return None


def call_problems(actual: ActualCall, expected: ExpectedCall, tools: Sequence[ToolDefinition] | None) -> list[str]:
    """Everything wrong with `actual` as an instance of `expected` (empty list: it matches)."""
    label = f"call {expected.name}"
    if actual.name != expected.name:
        return [f"{label}: got function {actual.name!r}"]
    if not isinstance(actual.arguments, dict):
        return [f"{label}: arguments are not a JSON object: {actual.arguments!r}"]
    args = actual.arguments
    schema = tool_parameters(tools, expected.name) or {}
    props: dict[str, Any] = schema.get("properties") or {}
    problems = []
    required = list(dict.fromkeys([*schema.get("required", []), *expected.required, *expected.arguments]))
    for key in required:
        if key not in args:
            problems.append(f"{label}: missing argument {key!r}")
    known = set(props) | set(expected.arguments) | set(expected.allowed) | set(expected.types)
    if not expected.allow_extra_args:
        for key in args:
            if key not in known:
                problems.append(f"{label}: unexpected argument {key!r}")
    for key, value in args.items():
        problems += _value_problems(label, key, value, props.get(key) or {}, expected)
    return problems


def _value_problems(label: str, key: str, value: Any, prop: dict[str, Any], expected: ExpectedCall) -> list[str]:
    out = []
    json_type = expected.types.get(key) or prop.get("type")
    if isinstance(json_type, str) and not type_ok(value, json_type):
        return [f"{label}: argument {key!r} should be {json_type}, got {type(value).__name__} {value!r}"]
    item_type = (prop.get("items") or {}).get("type") if json_type == "array" else None
    if isinstance(item_type, str) and any(not type_ok(v, item_type) for v in value):
        out.append(f"{label}: argument {key!r} should be an array of {item_type}, got {value!r}")
    if "enum" in prop and not any(values_equal(value, e) for e in prop["enum"]):
        out.append(f"{label}: argument {key!r} = {value!r} is not one of the declared enum {prop['enum']!r}")
    if key in expected.arguments and not values_equal(value, expected.arguments[key]):
        out.append(f"{label}: argument {key!r} = {value!r}, expected {expected.arguments[key]!r}")
    if key in expected.allowed and not any(values_equal(value, a) for a in expected.allowed[key]):
        out.append(f"{label}: argument {key!r} = {value!r} is not one of {expected.allowed[key]!r}")
    return out


def match_calls(actual: list[ActualCall], expected: list[ExpectedCall], tools: Sequence[ToolDefinition] | None = None,
                ordered: bool = False) -> MatchResult:
    """Pair every expected call with a distinct matching actual call (any order unless `ordered`)."""
    if len(actual) != len(expected):
        got = ", ".join(c.name for c in actual) or "none"
        return MatchResult(False, (f"expected {len(expected)} call(s), got {len(actual)} ({got})",))
    problems = [[call_problems(a, e, tools) for a in actual] for e in expected]
    if ordered:
        flat = [p for i in range(len(expected)) for p in problems[i][i]]
        return MatchResult(not flat, tuple(flat), tuple((i, i) for i in range(len(expected))) if not flat else ())
    pairs = _perfect_matching([[not p for p in row] for row in problems])
    if pairs is not None:
        return MatchResult(True, (), tuple(pairs))
    # No full matching: for each expected call, explain the closest actual call.
    explained = []
    for row in problems:
        best = min(row, key=len)
        explained += best or []
    return MatchResult(False, tuple(explained or ["no one-to-one pairing of expected and actual calls"]))


def _perfect_matching(ok: list[list[bool]]) -> list[tuple[int, int]] | None:
    """A perfect matching in a small bipartite graph (augmenting paths), or None."""
    owner: dict[int, int] = {}  # actual index -> expected index

    def assign(e: int, seen: set[int]) -> bool:
        for a, fits in enumerate(ok[e]):
            if fits and a not in seen:
                seen.add(a)
                if a not in owner or assign(owner[a], seen):
                    owner[a] = e
                    return True
        return False

    for e in range(len(ok)):
        if not assign(e, set()):
            return None
    return sorted((e, a) for a, e in owner.items())
