"""Assertions on structured answers: JSON against a schema, Python source, tool calls.

Invalid JSON where JSON is required, and tool-call arguments that are not JSON, are hard
failures: no reference is needed to know they are broken (a streaming parser that leaks partial
delimiters produces exactly these). A schema violation, code that does not parse, or a call with
the wrong function or argument values is judged against what the reference did.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from typing import Any, ClassVar

import jsonschema

from gatekeeper.endpoints.chat_types import ToolDefinition
from gatekeeper.golden.answer import clip, strip_fences
from gatekeeper.golden.assertion_base import PASSED, Assertion, Outcome, SpecError, need, need_type, register
from gatekeeper.golden.tool_match import ActualCall, ExpectedCall, match_calls, type_ok
from gatekeeper.endpoints.responses import ChatResponse


@register
@dataclass(frozen=True)
class JsonSchema(Assertion):
    """The text is JSON (or the first code fence in it) valid under `schema` (JSON Schema
    2020-12; use `const`/`enum` to pin values). Text that is not JSON is a hard failure."""

    type: ClassVar[str] = "json_schema"
    schema: Any = None

    def validate(self) -> None:
        need(isinstance(self.schema, dict), "schema", "json_schema needs a `schema` mapping")
        try:
            jsonschema.Draft202012Validator.check_schema(self.schema)
        except jsonschema.SchemaError as e:
            raise SpecError("schema", f"not a valid JSON Schema: {e.message}") from None

    def check(self, response: ChatResponse, tools: Any) -> Outcome:
        try:
            doc = json.loads(strip_fences(response.text))
        except ValueError as e:
            return Outcome(False, f"the answer is not JSON ({e}): {clip(response.text)}", hard=True)
        errors = sorted(jsonschema.Draft202012Validator(self.schema).iter_errors(doc), key=lambda e: list(e.path))
        if not errors:
            return PASSED
        where = "/".join(str(p) for p in errors[0].path) or "(root)"
        return Outcome(False, f"schema violation at {where}: {errors[0].message}")


@register
@dataclass(frozen=True)
class PythonAst(Assertion):
    """The text (or the first code fence in it) parses as Python with `ast`; `defines` names a
    function or class it must define."""

    type: ClassVar[str] = "python_ast"
    defines: str | None = None

    def validate(self) -> None:
        need_type(self.defines, str, "defines", "a name", optional=True)

    def check(self, response: ChatResponse, tools: Any) -> Outcome:
        try:
            tree = ast.parse(strip_fences(response.text))
        except (SyntaxError, ValueError) as e:
            return Outcome(False, f"not valid Python: {e.__class__.__name__}: {e}")
        defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        names = {n.name for n in ast.walk(tree) if isinstance(n, defs)}
        if self.defines and self.defines not in names:
            return Outcome(False, f"the code defines {sorted(names)!r}, not {self.defines!r}")
        return PASSED


_CALL_KEYS = {"name", "arguments", "allowed", "required", "types", "allow_extra_args"}


@register
@dataclass(frozen=True)
class ToolCallAssertion(Assertion):
    """The answer's tool calls match `calls` (order-free unless `ordered`), BFCL-style: names,
    required and undeclared arguments, JSON types, declared enums, expected or allowed values.
    `calls: []` asserts that no tool is called. `content: empty` also forbids text beside calls.
    Arguments that are not a JSON object are a hard failure."""

    type: ClassVar[str] = "tool_call"
    calls: list[Any] = field(default_factory=list)
    ordered: bool = False
    content: str = "any"

    def validate(self) -> None:
        need(isinstance(self.calls, list), "calls", "calls must be a list of expected calls")
        need(self.content in ("any", "empty"), "content", "content must be 'any' or 'empty'")
        for i, spec in enumerate(self.calls):
            need(isinstance(spec, dict) and isinstance(spec.get("name"), str), "calls",
                 f"calls[{i}] must be a mapping with a string `name`")
            unknown = set(spec) - _CALL_KEYS
            need(not unknown, "calls", f"calls[{i}] has unknown keys {sorted(unknown)}; allowed: {sorted(_CALL_KEYS)}")
            for key in ("arguments", "allowed", "types"):
                need(isinstance(spec.get(key, {}), dict), "calls", f"calls[{i}].{key} must be a mapping")
            for param, json_type in spec.get("types", {}).items():
                try:
                    type_ok(None, json_type)
                except ValueError as e:
                    raise SpecError("calls", f"calls[{i}].types.{param}: {e}") from None

    def expected(self) -> list[ExpectedCall]:
        """The expectations as matcher values."""
        return [ExpectedCall(s["name"], dict(s.get("arguments", {})), {k: list(v) for k, v in s.get("allowed", {}).items()},
                             tuple(s.get("required", ())), dict(s.get("types", {})), bool(s.get("allow_extra_args", False)))
                for s in self.calls]

    def check(self, response: ChatResponse, tools: list[ToolDefinition] | None) -> Outcome:
        for call in response.tool_calls:
            if not isinstance(call.parsed, dict):
                return Outcome(False, f"tool call {call.name!r} has arguments that are not a JSON object: "
                                      f"{clip(call.arguments)}", hard=True)
        if self.content == "empty" and response.text.strip():
            return Outcome(False, f"text beside the tool calls: {clip(response.text)}")
        actual = [ActualCall(c.name, c.parsed) for c in response.tool_calls]
        result = match_calls(actual, self.expected(), tools, self.ordered)
        if result.ok:
            return PASSED
        extra = f"; text was {clip(response.text)}" if not actual and response.text.strip() else ""
        return Outcome(False, "; ".join(result.problems) + extra)
