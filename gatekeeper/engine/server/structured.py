"""What a request asks its output to be — `response_format`, vLLM's `structured_outputs`, a forced
tool choice — as one grammar for the engine (`engine/grammar.py`), checked before the request is
queued so an unsupported schema is a 400 naming it.

- `response_format`: `{"type": "text"}` (nothing), `{"type": "json_object"}` (any JSON object),
  `{"type": "json_schema", "json_schema": {"name": …, "schema": {…}}}` (OpenAI's shape).
- `structured_outputs` (vLLM's extension, exactly one of): `json` (a schema, or its JSON text),
  `json_object` (true), `regex`, `choice` (a list of strings), `grammar` (Lark).
- chat `tool_choice`: `"required"` — at least one Hermes call of one of the tools, several when
  `parallel_tool_calls`; a named function — exactly one call of that function. The arguments match
  the tool's `parameters` schema.

A request may carry one of these; two at once is a 400, as in vLLM.
"""

from __future__ import annotations

import json
from typing import Any

from gatekeeper.engine.grammar import TOOL_END, TOOL_START, GrammarSpec, Grammars
from gatekeeper.engine.server.errors import ApiError

_STRUCTURED_KEYS = ("json", "json_object", "regex", "choice", "grammar")


def _response_format(rf: dict[str, Any]) -> str | None:
    kind = rf.get("type")
    if kind in (None, "text"):
        return None
    if kind == "json_object":
        return GrammarSpec.json_object()
    if kind == "json_schema":
        spec = rf.get("json_schema")
        if not isinstance(spec, dict) or "schema" not in spec:
            raise ApiError("response_format json_schema needs {\"json_schema\": {\"name\": ..., \"schema\": {...}}}",
                           param="response_format")
        return GrammarSpec.json_schema(spec["schema"])
    raise ApiError(f"response_format.type must be text, json_object or json_schema, not {kind!r}",
                   param="response_format")


def _structured_outputs(so: dict[str, Any]) -> str | None:
    given = [k for k in _STRUCTURED_KEYS if so.get(k) not in (None, False)]
    unknown = sorted(k for k, v in so.items() if k not in _STRUCTURED_KEYS and v not in (None, False))
    if unknown:
        raise ApiError(f"structured_outputs.{unknown[0]} is not supported by the bundled engine "
                       f"(supported: {', '.join(_STRUCTURED_KEYS)})", param="structured_outputs")
    if len(given) > 1:
        raise ApiError(f"structured_outputs takes one constraint, got {', '.join(given)}", param="structured_outputs")
    if not given:
        return None
    key, value = given[0], so[given[0]]
    if key == "json":
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as e:
                raise ApiError(f"structured_outputs.json is not JSON: {e}", param="structured_outputs") from None
        return GrammarSpec.json_schema(value)
    if key == "json_object":
        return GrammarSpec.json_object()
    if key == "regex":
        if not isinstance(value, str):
            raise ApiError("structured_outputs.regex must be a string", param="structured_outputs")
        return GrammarSpec.regex(value)
    if key == "choice":
        return GrammarSpec.choice(value)
    if not isinstance(value, str):
        raise ApiError("structured_outputs.grammar must be a Lark grammar string", param="structured_outputs")
    return value


def constraint(grammars: Grammars | None, response_format: dict[str, Any] | None,
               structured_outputs: dict[str, Any] | None, tools: list[dict[str, Any]] | None = None,
               tool_choice: Any = None, parallel: bool = True) -> str | None:
    """The grammar the request's output must match (None: free text), compiled once to check it.
    `tool_choice` is "required", a function name (a named choice), or anything else (unconstrained)."""
    try:
        return _constraint(grammars, response_format, structured_outputs, tools, tool_choice, parallel)
    except ValueError as e:  # llguidance's builders refuse what is not JSON-shaped
        raise ApiError(f"cannot build the grammar: {e}", param="response_format") from None


def _constraint(grammars: Grammars | None, response_format: dict[str, Any] | None,
                structured_outputs: dict[str, Any] | None, tools: list[dict[str, Any]] | None,
                tool_choice: Any, parallel: bool) -> str | None:
    found: list[tuple[str, str]] = []
    if response_format:
        g = _response_format(response_format)
        if g is not None:
            found.append(("response_format", g))
    if structured_outputs:
        g = _structured_outputs(structured_outputs)
        if g is not None:
            found.append(("structured_outputs", g))
    tags = grammars.tool_tags() if grammars is not None else (json.dumps(TOOL_START), json.dumps(TOOL_END))
    if tools and tool_choice == "required":
        found.append(("tool_choice", GrammarSpec.tool_calls(tools, parallel, tags)))
    elif tools and isinstance(tool_choice, str) and tool_choice not in ("auto", "none"):
        named = [t for t in tools if t["function"]["name"] == tool_choice]
        found.append(("tool_choice", GrammarSpec.tool_calls(named, False, tags)))
    if len(found) > 1:
        raise ApiError(f"{found[0][0]} and {found[1][0]} cannot both constrain one request", param=found[1][0])
    if not found:
        return None
    param, grammar = found[0]
    if grammars is None:
        raise ApiError(f"{param}: this engine has no grammar backend", param=param)
    grammars.check(grammar, param)
    return grammar
