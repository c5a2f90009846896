"""Parsing target specifications from flags (`bundled:optimized`, a URL) or run-config YAML."""

from __future__ import annotations

from typing import Any

from gatekeeper.config.yaml_lines import line_of
from gatekeeper.errors import ConfigError
from gatekeeper.targets.interface import Target, TargetSpec
from gatekeeper.targets.process import ProcessTarget
from gatekeeper.targets.url import UrlTarget

_KEYS = {
    "bundled": {"kind", "profile", "model", "options", "faults", "ready_timeout_s"},
    "url": {"kind", "url", "model", "api_key_env"},
    "launch": {"kind", "command", "model", "env", "cwd", "health_path", "ready_timeout_s"},
}


def parse_target(value: Any, where: str = "target", path: str | None = None) -> TargetSpec:
    """A TargetSpec from `bundled[:reference|optimized]`, an http(s) URL, or a mapping."""
    if isinstance(value, str):
        if value.startswith(("http://", "https://")):
            return TargetSpec(kind="url", url=value)
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
    if kind == "url" and not str(value.get("url", "")).startswith(("http://", "https://")):
        raise ConfigError("needs an http(s) url", path, line_of(value, "url"), f"{where}.url")
    if kind == "launch":
        cmd = value.get("command")
        if not isinstance(cmd, str) or "{port}" not in cmd:
            raise ConfigError("needs a command template containing {port}", path, line_of(value, "command"), f"{where}.command")
    options = value.get("options") or {}
    if not isinstance(options, dict):
        raise ConfigError("must be a mapping of engine option -> value", path, line_of(value, "options"), f"{where}.options")
    faults = value.get("faults") or []
    if not isinstance(faults, list):
        raise ConfigError("must be a list of fault names", path, line_of(value, "faults"), f"{where}.faults")
    env = value.get("env") or {}
    return TargetSpec(
        kind=kind,
        profile=str(value.get("profile", "optimized")),
        model=value.get("model"),
        url=value.get("url"),
        api_key_env=value.get("api_key_env"),
        command=value.get("command"),
        env=tuple((str(k), str(v)) for k, v in env.items()),
        cwd=value.get("cwd"),
        health_path=str(value.get("health_path", "/health")),
        ready_timeout_s=float(value.get("ready_timeout_s", 180.0)),
        engine_options=tuple((str(k), _flag_value(v)) for k, v in options.items()),
        faults=tuple(str(f) for f in faults),
    )


def _flag_value(v: Any) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


def make_target(role: str, spec: TargetSpec) -> Target:
    """The Target implementation for a spec."""
    return UrlTarget(role, spec) if spec.kind == "url" else ProcessTarget(role, spec)
