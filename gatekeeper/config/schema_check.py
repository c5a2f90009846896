"""Checking a value against a fragment of JSON Schema, with a message for people.

The policy and run-config schemas (`gatekeeper/schemas/`) are generated from the settings
dataclasses, the run options and the target keys, and the loaders check what a file, a variable
or a flag gives against those same fragments: a range is written once, where the setting is
declared, and the schema an editor validates with is the one gatekeeper enforces.

    check(10**9, {"type": "integer", "minimum": 1, "maximum": 1024})
    # SchemaError: must be an integer from 1 to 1024, not 1000000000

The subset understood: `type` (one or a list), `enum`, `const`, `minimum`, `maximum`,
`exclusiveMinimum`, `exclusiveMaximum`, `minItems`, `maxItems`, `minLength`, `pattern`, `items`,
`properties`, `required`, `additionalProperties`; other keywords are documentation. Numbers must
also be finite: YAML's `.inf` and `.nan` are not JSON numbers, and a tolerance of `.inf` is a
check that cannot fail. A `description` on the failing fragment is added to the message as the
reason for the rule.
"""

from __future__ import annotations

import math
import re
from typing import Any

Path = tuple[Any, ...]  # keys and list indexes below the value checked

_NOUNS = {"integer": "an integer", "number": "a number", "string": "a string", "boolean": "true or false",
          "array": "a list", "object": "a mapping", "null": "null"}


class SchemaError(ValueError):
    """A value breaks its schema at `path` (empty: the value itself); the message says how.
    `schema` is the fragment broken where the value does not fit it (None: a missing or unknown key)."""

    def __init__(self, path: Path, message: str, schema: dict[str, Any] | None = None):
        super().__init__(message)
        self.path = path
        self.message = message
        self.schema = schema


def dotted(path: Path) -> str:
    """A path as it follows a key in an error: `.float32.kl_max`, `[2]`."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


def shown(value: Any) -> str:
    """A value as the user wrote it (YAML's spelling for the non-finite floats)."""
    if isinstance(value, float) and not math.isfinite(value):
        return ".nan" if math.isnan(value) else ".inf" if value > 0 else "-.inf"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "a mapping" if value else "{}"
    if isinstance(value, list):
        return f"a list of {len(value)}" if value else "[]"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _number(x: Any) -> str:
    return str(int(x)) if isinstance(x, (int, float)) and float(x).is_integer() else repr(x)


def _bounds(schema: dict[str, Any]) -> str:
    low = ("at least", schema["minimum"]) if "minimum" in schema else \
        ("above", schema["exclusiveMinimum"]) if "exclusiveMinimum" in schema else None
    high = ("at most", schema["maximum"]) if "maximum" in schema else \
        ("below", schema["exclusiveMaximum"]) if "exclusiveMaximum" in schema else None
    if low and high and low[0] == "at least" and high[0] == "at most":
        return f"from {_number(low[1])} to {_number(high[1])}"
    return " and ".join(f"{side[0]} {_number(side[1])}" for side in (low, high) if side is not None)


def _noun(name: str, schema: dict[str, Any]) -> str:
    """One type's noun with what is said of it alone: "a non-empty string", "a list of 2 integers"."""
    if name == "string":
        noun = "a non-empty string" if schema.get("minLength", 0) > 0 else "a string"
        return noun + (f" matching {schema['pattern']}" if "pattern" in schema else "")
    if name != "array":
        return _NOUNS.get(name, name)
    low, high = schema.get("minItems", 0), schema.get("maxItems")
    items = schema.get("items")
    of = f" of {_plural(describe(items))}" if isinstance(items, dict) and items.get("type") else ""
    if high is not None and low == high:
        return f"a list of {low}" + (of[3:] if of else " items")
    counts = ([f"at least {low} items"] if low > 1 else []) + ([f"at most {high} items"] if high is not None else [])
    return ("a non-empty list" if low == 1 else "a list") + of + (f" ({', '.join(counts)})" if counts else "")


def describe(schema: dict[str, Any]) -> str:
    """What a fragment allows, as the end of "must be ...": "an integer from 1 to 1024"."""
    if "const" in schema:
        return shown(schema["const"])
    if "enum" in schema:
        return "one of " + ", ".join(str(v) for v in schema["enum"])
    types = schema.get("type")
    names = [types] if isinstance(types, str) else list(types or [])
    text = " or ".join(_noun(t, schema) for t in names) or "a value"
    bounds = _bounds(schema)
    return f"{text} {bounds}" if bounds else text


def _plural(noun: str) -> str:
    for one, many in (("an integer", "integers"), ("a number", "numbers"), ("a non-empty string", "non-empty strings"),
                      ("a string", "strings"), ("a mapping", "mappings"), ("a list", "lists")):
        if noun.startswith(one):
            return many + noun[len(one):]
    return noun


def _is_type(value: Any, name: str) -> bool:
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, {"string": str, "boolean": bool, "array": list, "object": dict, "null": type(None)}[name])


def must_be(schema: dict[str, Any], written: str) -> str:
    """The message for a value (as the user wrote it) that does not fit `schema`."""
    why = f": {schema['description']}" if schema.get("description") else ""
    return f"must be {describe(schema)}, not {written}{why}"


def _fail(path: Path, schema: dict[str, Any], value: Any) -> SchemaError:
    return SchemaError(path, must_be(schema, shown(value)), schema)


def check(value: Any, schema: dict[str, Any], path: Path = ()) -> None:
    """Raise SchemaError at the first place `value` breaks `schema`."""
    if "const" in schema and value != schema["const"]:
        raise _fail(path, schema, value)
    if "enum" in schema and value not in schema["enum"]:
        raise _fail(path, schema, value)
    types = schema.get("type")
    if types is not None:
        names = [types] if isinstance(types, str) else list(types)
        if not any(_is_type(value, t) for t in names):
            raise _fail(path, schema, value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if isinstance(value, float) and not math.isfinite(value):
            raise _fail(path, schema, value)
        if ("minimum" in schema and value < schema["minimum"]) or ("maximum" in schema and value > schema["maximum"]) \
                or ("exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]) \
                or ("exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]):
            raise _fail(path, schema, value)
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0) or ("pattern" in schema and not re.search(schema["pattern"], value)):
            raise _fail(path, schema, value)
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0) or len(value) > schema.get("maxItems", len(value)):
            raise _fail(path, schema, value)
        if isinstance(schema.get("items"), dict):
            for i, item in enumerate(value):
                check(item, schema["items"], path + (i,))
    if isinstance(value, dict):
        _check_object(value, schema, path)


def _check_object(value: dict[Any, Any], schema: dict[str, Any], path: Path) -> None:
    props: dict[str, Any] = schema.get("properties", {})
    for key in schema.get("required", []):
        if key not in value:
            raise SchemaError(path, f"missing {key} (needs {', '.join(schema['required'])})")
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        if key in props:
            check(item, props[key], path + (key,))
        elif extra is False:
            raise SchemaError(path + (key,), f"unknown key (known: {', '.join(props)})")
        elif isinstance(extra, dict):
            check(item, extra, path + (key,))
