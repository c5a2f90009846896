"""Task success: what a replayed request can be checked for, whatever the reference answered, and
whether an answer achieves it.

An answer that parts from the reference's is not a lost task: another wording, another order of
a tool call's arguments, a near tie that bf16 rounding tips the other way may serve the client as
well (that is `disagreement`, its own measure). A task is lost where the request says what a
right answer is. The checks a request has:

- `json`: it asked for JSON (`response_format` json_object or json_schema): the answer parses as
  JSON and, under a json_schema, the value validates against its `schema`;
- `tool_call`: it offers tools and the reference called one: the answer calls only offered tools,
  each with arguments that are a JSON object valid against the tool's `parameters`;
- `refusal`: the reference answered (its answer is no refusal): the answer is no refusal either;
- `answer`: the traffic record gives `expected` (docs/traffic-format.md): the answer's text,
  stripped of surrounding whitespace, is exactly that.

A failed request (HTTP error, timeout, malformed answer) fails every check it has. An answer that
breaks JSON or a tool call fails its task here and its structure in `json_parse` / `tool_parse`
too: one request's task against the parse rates of the structures.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any

import jsonschema

from gatekeeper.traffic.answers import Answer
from gatekeeper.golden.answer import strip_fences
from gatekeeper.golden.assertions import REFUSAL_MARKERS

CHECKS = ("json", "tool_call", "refusal", "answer")
"""The checks a request's task can have, in the order failures are listed."""

NOT_JSON = object()
"""What `parsed_json` returns for text that is no JSON."""

_REFUSAL = re.compile("|".join(REFUSAL_MARKERS), re.I)


@dataclass(frozen=True)
class Task:
    """What one request's answer is checked for: `json` (JSON asked, `schema` its json_schema or
    None), `tools` (a valid call of these is expected; None: no tool check), `answered` (the
    reference answered, so a refusal fails), `expected` (the exact answer; None: not given)."""

    json: bool = False
    schema: dict[str, Any] | None = None
    tools: tuple[dict[str, Any], ...] | None = None
    answered: bool = False
    expected: str | None = None

    @property
    def checks(self) -> tuple[str, ...]:
        """The checks this task has (empty: nothing to check)."""
        on = {"json": self.json, "tool_call": self.tools is not None, "refusal": self.answered,
              "answer": self.expected is not None}
        return tuple(c for c in CHECKS if on[c])

    def failures(self, a: Answer) -> tuple[str, ...]:
        """The checks `a` fails (all of them for a failed request)."""
        if a.failed:
            return self.checks
        bad = {"json": lambda: not valid_json(a.text, self.schema),
               "tool_call": lambda: self.tools is not None and not valid_calls(a, self.tools),
               "refusal": lambda: refused(a),
               "answer": lambda: a.text.strip() != (self.expected or "").strip()}
        return tuple(c for c in self.checks if bad[c]())


def parsed_json(text: str) -> Any:
    """The JSON value of an answer's text (a ``` fence around it allowed), or NOT_JSON."""
    try:
        return json.loads(strip_fences(text.strip()))
    except ValueError:
        return NOT_JSON


def valid_json(text: str, schema: dict[str, Any] | None) -> bool:
    """Whether `text` is JSON and, given a schema that is itself valid, a value it accepts."""
    value = parsed_json(text)
    if value is NOT_JSON:
        return False
    validator = _validator(json.dumps(schema, sort_keys=True)) if isinstance(schema, dict) else None
    return validator is None or bool(validator.is_valid(value))


def valid_calls(a: Answer, tools: tuple[dict[str, Any], ...]) -> bool:
    """Whether the answer calls tools, each one offered, with arguments that are a JSON object
    valid against the tool's parameters."""
    if not a.calls:
        return False
    schemas = {t.get("function", {}).get("name"): t.get("function", {}).get("parameters") for t in tools}
    for name, args in a.calls:
        if name not in schemas:
            return False
        try:
            value = json.loads(args)
        except ValueError:
            return False
        if not isinstance(value, dict):
            return False
        schema = schemas[name]
        if isinstance(schema, dict):
            validator = _validator(json.dumps(schema, sort_keys=True))
            if validator is not None and not validator.is_valid(value):
                return False
    return True


def refused(a: Answer) -> bool:
    """Whether an answer is a refusal: a refusal phrase (gate 3's markers) and no tool call."""
    return not a.failed and not a.calls and _REFUSAL.search(a.text) is not None


def json_schema_of(request: dict[str, Any]) -> dict[str, Any] | None:
    """The schema of a `response_format` of type json_schema (None when there is none)."""
    fmt = request.get("response_format")
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        return None
    spec = fmt.get("json_schema")
    schema = spec.get("schema") if isinstance(spec, dict) else None
    return schema if isinstance(schema, dict) else None


@functools.lru_cache(maxsize=1024)
def _validator(schema_json: str) -> Any:
    """A compiled validator per schema (checking the schema once, not once per answer); None for
    a schema that is itself broken — not the answer's fault."""
    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError:
        return None
    return cls(schema)
