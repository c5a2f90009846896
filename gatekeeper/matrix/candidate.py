"""A matrix's candidate: the launch template each cell fills in.

Either the bundled engine with engine options (what `--candidate-opt KEY=VALUE` sets):

    candidate:
      target: bundled:optimized
      opts: {dtype: "{dtype}", tp: "{tp}", fused_norm: "{fused_norm}"}

or a command that starts a real engine (a run config's `kind: launch` target; `{port}`,
`{model}` and `{api_key}` are the launch's own, filled when it starts):

    candidate:
      launch: "vllm serve {model} --port {port} --tensor-parallel-size {tp} --dtype {dtype} {enforce_eager}"
      env: {VLLM_ATTENTION_BACKEND: "{attention_backend}"}
      fill: {enforce_eager: {off: "", on: "--enforce-eager"}}
      ready_timeout_s: 900

`{axis}` fills in the cell's value (booleans as true / false); an axis with a `fill` table fills
in its text for the value instead, and the table must cover every value the axis takes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gatekeeper.config import schema_check
from gatekeeper.config.yaml_lines import line_of
from gatekeeper.errors import ConfigError
from gatekeeper.matrix.cell import Value, as_text, render
from gatekeeper.matrix.template import TemplateError, check, fill
from gatekeeper.targets.spec import KEY_SCHEMAS

_COMMON = {"fill", "ready_timeout_s"}
KEYS = {"bundled": {"target", "opts"} | _COMMON, "launch": {"launch", "env", "cwd", "health_path", "api_key_env"} | _COMMON}
_OPTION = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class CandidateTemplate:
    """The parsed template: for `bundled`, the profile and engine option templates; for
    `launch`, the command and environment templates; the launch settings copied as written;
    and the fill tables (axis -> rendered value -> text)."""

    kind: str
    profile: str = "optimized"
    opts: tuple[tuple[str, str], ...] = ()
    command: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    settings: tuple[tuple[str, Any], ...] = ()
    fills: dict[str, dict[str, str]] = field(default_factory=dict, compare=False)

    def texts(self, values: Mapping[str, Value]) -> dict[str, str]:
        """What each axis fills in for a cell with these (raw) values."""
        return {axis: self.fills[axis][render(v)] if axis in self.fills else as_text(v) for axis, v in values.items()}

    def target(self, texts: Mapping[str, str]) -> dict[str, Any]:
        """The cell's candidate as a run-config target mapping (targets/spec.py reads it)."""
        if self.kind == "bundled":
            return {"kind": "bundled", "profile": self.profile, "options": {k: fill(t, texts) for k, t in self.opts},
                    **dict(self.settings)}
        assert self.command is not None
        out: dict[str, Any] = {"kind": "launch", "command": fill(self.command, texts, launch=True)}
        if self.env:
            out["env"] = {k: fill(t, texts) for k, t in self.env}
        return {**out, **dict(self.settings)}


def parse_candidate(raw: Any, path: str, line: int | None, known: Mapping[str, list[str]]) -> CandidateTemplate:
    """The candidate template, validated against the axes (`known`: axis -> every value a cell
    can have); every error names the file, the line and the key."""
    if not isinstance(raw, dict):
        raise ConfigError("must be a mapping with `target` (the bundled engine) or `launch` (a command)", path, line,
                          "candidate")
    kinds = [k for k in ("target", "launch") if k in raw]
    if len(kinds) != 1:
        raise ConfigError("needs exactly one of `target: bundled[:optimized|reference]` or `launch: COMMAND`", path,
                          line, "candidate")
    kind = "bundled" if kinds[0] == "target" else "launch"
    for key in raw:
        if key not in KEYS[kind]:
            raise ConfigError(f"unknown key for a {'bundled' if kind == 'bundled' else 'launch'} candidate "
                              f"(known: {', '.join(sorted(KEYS[kind]))})", path, line_of(raw, key), f"candidate.{key}")
    settings = _settings(raw, path)
    fills = _fills(raw.get("fill"), path, line_of(raw, "fill"), known)
    if kind == "bundled":
        target = raw["target"]
        kind_name, _, profile = str(target).partition(":")
        profile = profile or "optimized"
        if not isinstance(target, str) or kind_name != "bundled" or profile not in ("optimized", "reference"):
            raise ConfigError("must be bundled, bundled:optimized or bundled:reference (a real engine is a `launch` "
                              "command)", path, line_of(raw, "target"), "candidate.target")
        opts = raw.get("opts") or {}
        if not isinstance(opts, dict):
            raise ConfigError("must be a mapping of engine option -> value", path, line_of(raw, "opts"), "candidate.opts")
        parsed = []
        for key, value in opts.items():
            name, at, where = str(key).replace("-", "_"), line_of(opts, key), f"candidate.opts.{key}"
            if not _OPTION.match(name):
                raise ConfigError("is not an engine option name (`gatekeeper serve --help` lists them)", path, at, where)
            parsed.append((name, _template(value, path, at, where, known)))
        return CandidateTemplate("bundled", profile, tuple(parsed), settings=settings, fills=fills)
    command = raw["launch"]
    at = line_of(raw, "launch")
    if not isinstance(command, str) or "{port}" not in command:
        raise ConfigError("must be a command template containing {port} (the free port gatekeeper picks)", path, at,
                          "candidate.launch")
    _template(command, path, at, "candidate.launch", known, launch=True)
    env = raw.get("env") or {}
    if not isinstance(env, dict):
        raise ConfigError("must be a mapping of variable -> value", path, line_of(raw, "env"), "candidate.env")
    env_items = tuple((str(k), _template(v, path, line_of(env, k), f"candidate.env.{k}", known)) for k, v in env.items())
    return CandidateTemplate("launch", command=command, env=env_items, settings=settings, fills=fills)


def _template(value: Any, path: str, line: int | None, where: str, known: Mapping[str, list[str]], launch: bool = False) -> str:
    """A scalar as template text, its placeholders checked against the axes."""
    if isinstance(value, (dict, list)) or value is None:
        raise ConfigError("must be a value (a string may hold {axis} placeholders)", path, line, where)
    text = as_text(value)
    try:
        check(text, known, launch=launch)
    except TemplateError as e:
        raise ConfigError(str(e), path, line, where) from None
    return text


def _settings(raw: dict, path: str) -> tuple[tuple[str, Any], ...]:
    """The launch settings copied into each cell's target, type-checked here."""
    out = []
    for key in ("ready_timeout_s", "cwd", "health_path", "api_key_env"):
        if key not in raw:
            continue
        value, at = raw[key], line_of(raw, key)
        if key == "ready_timeout_s":
            try:
                schema_check.check(value, KEY_SCHEMAS[key])
            except schema_check.SchemaError as e:
                raise ConfigError(e.message, path, at, f"candidate.{key}") from None
            value = float(value)
        elif not isinstance(value, str) or not value:
            raise ConfigError("must be a non-empty string", path, at, f"candidate.{key}")
        out.append((key, value))
    return tuple(out)


def _fills(raw: Any, path: str, line: int | None, known: Mapping[str, list[str]]) -> dict[str, dict[str, str]]:
    """Fill tables: axis -> {value: text}, each covering every value of its axis."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError("must be a mapping of axis -> {value: text}", path, line, "candidate.fill")
    out: dict[str, dict[str, str]] = {}
    for axis, table in raw.items():
        at, where = line_of(raw, axis), f"candidate.fill.{axis}"
        if axis not in known:
            raise ConfigError(f"no such axis (axes: {', '.join(known)})", path, at, where)
        if not isinstance(table, dict):
            raise ConfigError("must be a mapping of the axis's values -> the text each fills in", path, at, where)
        texts: dict[str, str] = {}
        for value, text in table.items():
            if isinstance(value, (dict, list)) or value is None or render(value) not in known[axis]:
                raise ConfigError(f"{value!r} is not a value of axis {axis} (values: {', '.join(known[axis])})", path,
                                  line_of(table, value), f"{where}.{value}")
            if isinstance(text, (dict, list)):
                raise ConfigError("must be text", path, line_of(table, value), f"{where}.{render(value)}")
            texts[render(value)] = "" if text is None else as_text(text)
        missing = [v for v in known[axis] if v not in texts]
        if missing:
            raise ConfigError(f"gives no text for {', '.join(missing)} (a fill table covers every value of its axis)",
                              path, at, where)
        out[str(axis)] = texts
    return out
