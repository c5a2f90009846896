"""The extension point for golden-case assertions: the base class, the registry, the builder.

A case's `assert:` list holds mappings with a `type` and that type's parameters; each type is a
frozen dataclass whose fields are its parameters. `build_assertion` turns a mapping into an
instance and raises `SpecError(key, message)` for an unknown type or a bad parameter, so that
the loader can name the file, line and key.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar

from gatekeeper.endpoints.chat_types import ToolDefinition
from gatekeeper.endpoints.responses import ChatResponse


class SpecError(Exception):
    """A bad assertion mapping; `key` names the offending parameter (None: the whole mapping)."""

    def __init__(self, key: str | None, message: str):
        super().__init__(message)
        self.key = key


@dataclass(frozen=True)
class Outcome:
    """One assertion's verdict on one answer. `hard`: wrong on its own, whatever the reference."""

    ok: bool
    reason: str = ""
    hard: bool = False


PASSED = Outcome(True)


class Assertion:
    """Base: subclasses set `type`, declare their parameters as dataclass fields, and implement
    `check` (absolute: the answer alone) or, with `relative = True`, `compare` (against a
    reference answer). An optional `validate()` raises SpecError for bad parameter values."""

    type: ClassVar[str]
    relative: ClassVar[bool] = False

    def check(self, response: ChatResponse, tools: list[ToolDefinition] | None) -> Outcome:
        """Judge an answer alone; `tools` are the case's tool definitions (or None)."""
        raise NotImplementedError

    def compare(self, response: ChatResponse, reference: ChatResponse, similar_threshold: float) -> Outcome:
        """Judge an answer against a reference answer."""
        raise NotImplementedError

    def describe(self) -> str:
        """A short label for reports: the type and its scalar parameters."""
        params = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self)  # type: ignore[arg-type]
                           if not isinstance(getattr(self, f.name), (dict, list)))
        return f"{self.type}({params})" if params else self.type


REGISTRY: dict[str, type[Assertion]] = {}


def register(cls: type[Assertion]) -> type[Assertion]:
    """Class decorator adding an assertion type to the registry (a name may be taken once)."""
    if cls.type in REGISTRY:
        raise ValueError(f"assertion type {cls.type!r} registered twice")
    REGISTRY[cls.type] = cls
    return cls


def build_assertion(spec: Any) -> Assertion:
    """An assertion from its YAML mapping; SpecError on an unknown type or bad parameters."""
    if not isinstance(spec, dict):
        raise SpecError(None, "an assertion must be a mapping with a 'type' key")
    kind = spec.get("type")
    if kind not in REGISTRY:
        raise SpecError("type", f"unknown assertion type {kind!r}; known: {', '.join(sorted(REGISTRY))}")
    cls = REGISTRY[kind]
    defaults = {f.name: f.default for f in fields(cls)}  # type: ignore[arg-type]
    params = {k: v for k, v in spec.items() if k != "type"}
    for key, value in params.items():
        if key not in defaults:
            raise SpecError(key, f"{kind} takes no parameter {key!r}; it takes: {', '.join(defaults) or 'none'}")
        default = defaults[key]
        if isinstance(default, bool) and not isinstance(value, bool):  # flags: YAML true/false only
            raise SpecError(key, f"{key} must be true or false, got {value!r}")
    made = cls(**params)
    validate = getattr(made, "validate", None)
    if validate is not None:
        validate()
    return made


def need(cond: bool, key: str, message: str) -> None:
    """Raise SpecError(key, message) unless cond: parameter validation in one line."""
    if not cond:
        raise SpecError(key, message)


def need_type(value: Any, types: type | tuple[type, ...], key: str, what: str, optional: bool = False) -> None:
    """Raise SpecError unless value is an instance of types (bool never counts as a number)."""
    if optional and value is None:
        return
    is_bool_as_number = isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,))
    need(isinstance(value, types) and not is_bool_as_number, key, f"{key} must be {what}, got {value!r}")
