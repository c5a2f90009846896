"""Parsing target specifications from flags (`bundled:optimized`, a URL) or run-config YAML.

Everything is checked here, at plan time: each key's type and range against `KEY_SCHEMAS` (the
run-config schema's target keys), a URL's host and port, and a launch command's template (only
its own placeholders, braces balanced, a command line shlex can split) — a launch target that
could only fail once started is a ConfigError naming the file, line and key instead.
"""

from __future__ import annotations

import re
import shlex
import string
import urllib.parse
from typing import Any

from gatekeeper.config.schema_check import SchemaError, check, dotted
from gatekeeper.config.yaml_lines import line_at, line_of
from gatekeeper.errors import ConfigError
from gatekeeper.targets.interface import DECLARABLE, LAUNCH_PLACEHOLDERS, Target, TargetSpec, normalise_dtype
from gatekeeper.targets.process import ProcessTarget
from gatekeeper.targets.url import UrlTarget

_KEYS = {
    "bundled": {"kind", "profile", "model", "options", "faults", "ready_timeout_s", "declare"},
    "url": {"kind", "url", "model", "api_key_env", "log_file", "log_command", "health_path", "declare"},
    "launch": {"kind", "command", "model", "env", "cwd", "health_path", "ready_timeout_s", "api_key_env", "declare"},
}
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TEXT = {"type": "string", "minLength": 1}
# Each target key's type and range: the run-config schema's, and what `parse_target` checks.
KEY_SCHEMAS: dict[str, dict[str, Any]] = {
    "kind": {}, "profile": {"enum": ["reference", "optimized"]}, "model": _TEXT,
    "url": {"type": "string", "pattern": "^https?://"},
    "api_key_env": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
    "options": {"type": ["object", "null"], "additionalProperties": {"type": ["string", "number", "boolean"]}},
    "faults": {"type": ["array", "null"], "items": _TEXT},
    "ready_timeout_s": {"type": "number", "exclusiveMinimum": 0, "maximum": 86400,
                        "description": "seconds to wait for the target to answer, at most a day"},
    "command": {"type": "string", "pattern": "\\{port\\}"},
    "env": {"type": ["object", "null"], "additionalProperties": {"type": ["string", "number", "boolean"]}},
    "cwd": _TEXT, "health_path": {"type": "string", "pattern": "^/", "description": "a URL path, e.g. /health"},
    "log_file": _TEXT, "log_command": _TEXT,
    "declare": {},  # parse_declared's (the schema's own in gatekeeper/schemas)
}


def normalise_url(url: str) -> str:
    """The server's base URL as gatekeeper uses it: no trailing slash and no trailing `/v1`
    (users copy `http://host:8000/v1` from their OpenAI client config; the paths are added here)."""
    url = url.strip().rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def parse_declared(value: Any, where: str, path: str | None = None, line: int | None = None) -> dict[str, str]:
    """A declared execution path: {dtype, quantization, kv_cache_dtype, tp, label.<name> or
    labels: {...}} → flat strings (dtype normalised); ConfigError for unknown keys or bad values."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError("must be a mapping (dtype, quantization, kv_cache_dtype, tp, labels)", path, line, where)
    out: dict[str, str] = {}
    for key, v in value.items():
        k = str(key)
        at = line_of(value, key) if path else line
        if k == "labels":
            if not isinstance(v, dict):
                raise ConfigError("must be a mapping of label -> value (hardware, backend, fusion switches...)", path, at,
                                  f"{where}.labels")
            out.update({f"label.{lk}": str(lv) for lk, lv in v.items()})
        elif k.startswith("label."):
            out[k] = str(v)
        elif k not in DECLARABLE:
            raise ConfigError(f"unknown key (known: {', '.join(DECLARABLE)}, labels or label.<name>)", path, at, f"{where}.{k}")
        elif k == "tp":
            try:
                tp = int(str(v))
            except ValueError:
                tp = 0
            if tp < 1:
                raise ConfigError("must be a positive integer (the tensor-parallel size)", path, at, f"{where}.tp")
            out[k] = str(tp)
        elif k == "dtype":
            dtype = normalise_dtype(str(v))
            if dtype is None:
                raise ConfigError(f"{v!r} is not a dtype (float32, bfloat16, float16, or fp32/bf16/fp16)", path, at,
                                  f"{where}.dtype")
            out[k] = dtype
        else:
            out[k] = str(v)
    return out


def check_url(url: str, path: str | None, line: int | None, where: str) -> None:
    """ConfigError unless `url` is an http(s) URL with a host and a valid port."""
    problem = None
    try:
        parts = urllib.parse.urlsplit(url.strip())
        parts.port  # noqa: B018 - raises ValueError for a port out of range or not a number
    except ValueError as e:
        problem = str(e)
    else:
        if parts.scheme not in ("http", "https"):
            problem = "needs http:// or https://"
        elif not parts.hostname:
            problem = "has no host"
        elif any(c.isspace() or ord(c) < 32 for c in url.strip()):
            problem = "holds a space or a control character"
    if problem:
        raise ConfigError(f"{url!r} is not a server URL: {problem}", path, line, where)


def check_command(command: str, path: str | None, line: int | None, where: str) -> None:
    """ConfigError unless a launch command is a template of its own placeholders ({port}, {model},
    {api_key}; {{ and }} for literal braces) that fills to a command line shlex can split."""
    try:
        names = [name for _, name, _, _ in string.Formatter().parse(command) if name is not None]
    except ValueError as e:
        raise ConfigError(f"is not a command template: {e} (write {{{{ and }}}} for literal braces)", path, line, where) from None
    known = ", ".join(f"{{{n}}}" for n in LAUNCH_PLACEHOLDERS)
    for name in names:
        if name not in LAUNCH_PLACEHOLDERS:
            raise ConfigError(f"unknown placeholder {{{name}}} (known: {known}; write {{{{ and }}}} for literal braces)",
                              path, line, where)
    try:
        argv = shlex.split(command.format(port=0, model="m", api_key="k"))
    except ValueError as e:
        raise ConfigError(f"is not a command line: {e}", path, line, where) from None
    if not argv:
        raise ConfigError("is an empty command", path, line, where)


def parse_target(value: Any, where: str = "target", path: str | None = None) -> TargetSpec:
    """A TargetSpec from `bundled[:reference|optimized]`, an http(s) URL, or a mapping."""
    if isinstance(value, str):
        if value.startswith(("http://", "https://")):
            check_url(value, path, None, where)
            return TargetSpec(kind="url", url=normalise_url(value))
        kind, _, profile_name = value.partition(":")
        if kind == "bundled":
            profile = profile_name or "optimized"
            if profile not in ("reference", "optimized"):
                raise ConfigError(f"unknown bundled profile {profile!r} (reference or optimized)", path, key=where)
            return TargetSpec(kind="bundled", profile=profile)
        raise ConfigError(f"{value!r} is not a target: use bundled, bundled:reference, bundled:optimized, "
                          "an http(s) URL, or a mapping in the run config", path, key=where)
    if not isinstance(value, dict):
        raise ConfigError("a target is a string or a mapping", path, line_of(value), where)
    kind = str(value.get("kind"))
    if kind not in _KEYS:
        raise ConfigError("kind must be bundled, url or launch", path, line_of(value, "kind"), f"{where}.kind")
    for key in value:
        if key not in _KEYS[kind]:
            raise ConfigError(f"unknown key for a {kind} target (known: {', '.join(sorted(_KEYS[kind]))})",
                              path, line_of(value, key), f"{where}.{key}")
    if kind == "url":
        if not str(value.get("url", "")).startswith(("http://", "https://")):
            raise ConfigError("needs an http(s) url", path, line_of(value, "url"), f"{where}.url")
        check_url(str(value["url"]), path, line_of(value, "url"), f"{where}.url")
    if kind == "launch":
        cmd = value.get("command")
        if not isinstance(cmd, str) or "{port}" not in cmd:
            raise ConfigError("needs a command template containing {port}", path, line_of(value, "command"), f"{where}.command")
        check_command(cmd, path, line_of(value, "command"), f"{where}.command")
    key_env = value.get("api_key_env")
    if key_env is not None and not (isinstance(key_env, str) and _ENV_NAME.fullmatch(key_env)):
        raise ConfigError("must be the NAME of an environment variable (the key itself never goes in a file)", path,
                          line_of(value, "api_key_env"), f"{where}.api_key_env")
    for key, item in value.items():
        try:
            check(item, KEY_SCHEMAS[key])
        except SchemaError as e:
            raise ConfigError(e.message, path, line_at(value, (key, *e.path)), f"{where}.{key}{dotted(e.path)}") from None
    options = value.get("options") or {}
    if not isinstance(options, dict):
        raise ConfigError("must be a mapping of engine option -> value", path, line_of(value, "options"), f"{where}.options")
    faults = value.get("faults") or []
    if not isinstance(faults, list):
        raise ConfigError("must be a list of fault names", path, line_of(value, "faults"), f"{where}.faults")
    env = value.get("env") or {}
    declared = parse_declared(value.get("declare"), f"{where}.declare", path, line_of(value, "declare"))
    return TargetSpec(
        kind=kind,
        profile=str(value.get("profile", "optimized")),
        model=value.get("model"),
        url=normalise_url(str(value["url"])) if kind == "url" else None,
        api_key_env=key_env,
        command=value.get("command"),
        env=tuple((str(k), str(v)) for k, v in env.items()),
        cwd=value.get("cwd"),
        health_path=str(value.get("health_path", "/health")),
        ready_timeout_s=float(value.get("ready_timeout_s", 180.0)),
        engine_options=tuple((str(k), _flag_value(v)) for k, v in options.items()),
        faults=tuple(str(f) for f in faults),
        log_file=value.get("log_file"),
        log_command=value.get("log_command"),
        declared=tuple(declared.items()),
    )


def _flag_value(v: Any) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


def make_target(role: str, spec: TargetSpec) -> Target:
    """The Target implementation for a spec."""
    return UrlTarget(role, spec) if spec.kind == "url" else ProcessTarget(role, spec)
