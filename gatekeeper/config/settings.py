"""Typed gate settings: each gate declares a frozen dataclass of its settings with their defaults.

A setting's range is written once, at its field: `concurrency: int = setting(4, minimum=1,
maximum=MAX_CONCURRENCY)`. `settings_schema` turns the dataclass into the gate's part of the
policy schema (its types from the type hints, its ranges from the fields), `python -m
gatekeeper.schemas` ships it, and the policy loader (`policy.py`) checks every value against it:
an unknown key, a value of the wrong type, out of range or not finite is a ConfigError naming the
file, line and key. What a schema cannot say (one setting against another, a regular expression
that must compile) the dataclass refuses in `__post_init__` by raising `SettingError`.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections.abc import Callable
from typing import Any

from gatekeeper.json_types import JsonObject
from gatekeeper.config.schema_check import SchemaError, check, dotted

# Upper bounds shared by the gates' settings: beyond these a value is a typo, not a plan.
MAX_CONCURRENCY = 1024  # parallel requests
MAX_CONTEXT_TOKENS = 1 << 20  # prompt and context lengths
MAX_ANSWER_TOKENS = 32768  # tokens asked for in one answer
MAX_REQUESTS = 1_000_000  # requests in one pass or budget
MAX_CASES = 10_000  # cases, reviews and allowed mismatches
MAX_GAP_NATS = 10.0  # a near-tie gap: logprob differences, in nats

SETTING_KEYS = ("enabled", "min_judged_share")  # every gate's, beside its own settings


class SettingError(ValueError):
    """A setting's value is out of range or of the wrong form; `key` names the setting."""

    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key


def require(condition: bool, key: str, message: str) -> None:
    """Raise SettingError(key, message) unless `condition` holds (for `__post_init__`)."""
    if not condition:
        raise SettingError(key, message)


def setting(default: Any = dataclasses.MISSING, *, factory: Callable[[], Any] | None = None, **schema: Any) -> Any:
    """A settings field with the JSON Schema constraints its type hint does not say — `minimum`,
    `maximum`, `exclusiveMinimum`, `exclusiveMaximum`, `minItems`, `items` (merged into the
    items' type), `description` (the reason, shown in the error) — for the policy schema and the
    loader's check. `factory` makes a mutable default (a list or a mapping)."""
    metadata = {"schema": schema}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def defaults_of(settings_type: type) -> dict[str, Any]:
    """Every setting of a settings dataclass with its default value, in declaration order."""
    return {f.name: f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
            for f in dataclasses.fields(settings_type)}


def check_ranges(settings: Any) -> None:
    """Check every field of a settings dataclass against its schema — what the policy loader
    checks, for settings made in code too (the first call in each `__post_init__`)."""
    settings_type: type = type(settings)
    props = settings_schema(settings_type)["properties"]
    for f in dataclasses.fields(settings):
        try:
            check(getattr(settings, f.name), props[f.name])
        except SchemaError as e:
            raise SettingError(f.name + dotted(e.path), e.message) from None


def json_type(hint: Any) -> JsonObject:
    """The JSON Schema type of a settings field's type hint (unions and Any left open)."""
    origin = typing.get_origin(hint)
    simple = {bool: "boolean", int: "integer", float: "number", str: "string"}
    if hint in simple:
        return {"type": simple[hint]}
    if origin is list:
        (item,) = typing.get_args(hint) or (Any,)
        return {"type": "array", "items": json_type(item)}
    if origin is dict:
        args = typing.get_args(hint)
        return {"type": "object", "additionalProperties": json_type(args[1]) if len(args) == 2 else {}}
    return {}  # Any or a union: left open; the dataclass checks it


def merged(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """`extra` over `base`, fragments under the same key merged (a field's `items` range into
    the items' type)."""
    out = dict(base)
    for key, value in extra.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


@functools.cache
def settings_schema(settings_type: type) -> dict[str, Any]:
    """A gate's section of the policy schema: `enabled`, `min_judged_share` and each field with
    its type, its range and its default."""
    hints = typing.get_type_hints(settings_type)
    defaults = defaults_of(settings_type)
    props: dict[str, Any] = {
        "enabled": {"type": "boolean", "description": "run this gate (false: an advisory SKIP in the report)"},
        "min_judged_share": {"type": "number", "minimum": 0, "maximum": 1,
                             "description": "below this judged share the gate's coverage check fails (HOLD)"},
    }
    for f in dataclasses.fields(settings_type):
        props[f.name] = {**merged(json_type(hints[f.name]), f.metadata.get("schema", {})), "default": defaults[f.name]}
    return {"type": ["object", "null"], "properties": props, "additionalProperties": False,
            "description": (settings_type.__doc__ or "").strip().split("\n")[0]}


@dataclasses.dataclass(frozen=True)
class NoSettings:
    """The settings of a gate that has none."""
