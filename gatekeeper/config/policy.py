"""Gate policies (`gates/*.yaml`): which gates run, their settings, which checks block.

A policy is validated against the registered gates when it is loaded: unknown gates, unknown
settings, settings of the wrong type, out of range or not finite (checked against the gate's
part of the policy schema, `settings.settings_schema`), and malformed blocking rules are
ConfigErrors naming the file, the line and the key. Each gate's settings are its typed settings
dataclass (see `settings.py`), built from its defaults overlaid with the policy's section.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gatekeeper.config.schema_check import SchemaError, check, dotted
from gatekeeper.config.settings import SETTING_KEYS, SettingError, defaults_of, settings_schema
from gatekeeper.config.yaml_lines import LineDict, line_at, line_of, load_yaml
from gatekeeper.errors import ConfigError

TOP_KEYS = {"version", "name", "description", "gates", "checks"}
# Settings renamed since policies were first written: the error names the new key.
RENAMED = {"noise_concurrency": "noise_floor_concurrency",
           "noise_floor": "noise_floor_concurrency (0 turns the noise-floor pass off)",
           "sqdr_max_excess": "decay_max_excess_slope (a limit on the mean per-session recall slope; SQDR is still reported)",
           "noise_absolute": "materiality (per critical measure: the excess over the twin that matters; no absolute "
                             "margin keeps a small excess from firing)"}


@dataclass(frozen=True)
class BlockingRule:
    """Checks whose id matches the glob `match` are blocking (or advisory)."""

    match: str
    blocking: bool


@dataclass(frozen=True, kw_only=True)
class Policy:
    """A loaded policy: typed settings per gate, the enabled gates, the blocking rules, and the
    line of each setting the file wrote (for errors found later, at plan time)."""

    path: str
    name: str
    gates: dict[str, Any]
    enabled: tuple[str, ...]
    rules: tuple[BlockingRule, ...] = ()
    description: str = ""
    lines: dict[tuple[str, str], int] = field(default_factory=dict, compare=False)
    min_judged: dict[str, float] = field(default_factory=dict)  # gate id -> the policy's coverage floor, where it sets one

    def where(self, gate_id: str, key: str) -> tuple[str, int | None]:
        """(file, line) of a gate's setting, for a ConfigError raised after loading."""
        return self.path, self.lines.get((gate_id, key))

    def with_setting(self, gate_id: str, key: str, value: Any) -> Policy:
        """The policy with one gate setting replaced (a run option that overrides the policy)."""
        from dataclasses import replace as _replace

        return _replace(self, gates={**self.gates, gate_id: _replace(self.gates[gate_id], **{key: value})})

    def is_blocking(self, check_id: str) -> bool:
        """First matching rule wins; checks no rule names are blocking (fail closed)."""
        for rule in self.rules:
            if fnmatch.fnmatchcase(check_id, rule.match):
                return rule.blocking
        return True

    def settings(self, gate_id: str) -> Any:
        """The typed settings of one gate."""
        return self.gates[gate_id]


def _build(path: str, gate_id: str, settings_type: type, section: Any) -> tuple[Any, bool, float | None]:
    """The gate's settings from its section, whether it is enabled and its coverage floor (None:
    the gate's default), or a ConfigError. Each value is checked against the gate's schema
    (`settings_schema`: type, range, finite) before the dataclass sees it; `enabled` and
    `min_judged_share` are every gate's."""
    if section is None:
        section = LineDict()
    if not isinstance(section, dict):
        raise ConfigError("a gate's section must be a mapping", path, line_of(section), f"gates.{gate_id}")
    schema = settings_schema(settings_type)["properties"]
    defaults = defaults_of(settings_type)
    values: dict[str, Any] = {}
    enabled, floor = True, None
    for key, value in section.items():
        where = f"gates.{gate_id}.{key}"
        if key not in schema:
            known = ", ".join([*SETTING_KEYS, *sorted(defaults)])
            renamed = f"; renamed to {RENAMED[key]}" if key in RENAMED else ""
            raise ConfigError(f"unknown setting (known: {known}){renamed}", path, line_of(section, key), where)
        try:
            check(value, schema[key])
        except SchemaError as e:
            raise ConfigError(e.message, path, line_at(section, (key, *e.path)), where + dotted(e.path)) from None
        if key == "enabled":
            enabled = value
        elif key == "min_judged_share":
            floor = float(value)
        else:
            values[key] = float(value) if isinstance(defaults[key], float) else value
    try:
        return settings_type(**values), enabled, floor
    except SettingError as e:
        raise ConfigError(str(e), path, line_of(section, e.key), f"gates.{gate_id}.{e.key}") from None


def load_policy(path: str | Path, settings_types: dict[str, type]) -> Policy:
    """Load and validate a policy file. `settings_types` maps gate id -> its settings dataclass
    (from the gate registry); the `enabled` setting every gate has turns it on or off."""
    return policy_from_data(load_yaml(path), str(path), settings_types)


def load_section(path: str | Path, gate_id: str, settings_type: type, others: Sequence[str]) -> Any:
    """One gate's typed settings from the policy at `path`, for a command that reads only that
    gate's part and imports no gate (the live proxy: gate 5's). The file is checked as
    `load_policy` checks it, except the sections of the `others` (the other gates' ids): they
    may be there, and their settings are left to the run that uses them."""
    return policy_from_data(load_yaml(path), str(path), {gate_id: settings_type}, unchecked=others).settings(gate_id)


def policy_from_data(data: Any, p: str, settings_types: dict[str, type], unchecked: Sequence[str] = ()) -> Policy:
    """Validate parsed policy YAML (LineDicts, for lines) that came from the file `p`: what
    `load_policy` does after reading, and what a matrix file's policy fragment is checked with.
    `unchecked`: gates whose sections are known but neither checked nor built (`load_section`)."""
    if not isinstance(data, dict):
        raise ConfigError("a policy must be a YAML mapping", p, line_of(data))
    for key in data:
        if key not in TOP_KEYS:
            raise ConfigError(f"unknown key (known: {', '.join(sorted(TOP_KEYS))})", p, line_of(data, key), str(key))
    if data.get("version", 1) != 1:
        raise ConfigError("unsupported policy version (this gatekeeper reads version 1)", p, line_of(data, "version"), "version")
    gates_section = data.get("gates") or LineDict()
    if not isinstance(gates_section, dict):
        raise ConfigError("must be a mapping of gate id -> settings", p, line_of(data, "gates"), "gates")
    for gate_id in gates_section:
        if gate_id not in settings_types and gate_id not in unchecked:
            raise ConfigError(f"unknown gate (known: {', '.join([*settings_types, *unchecked])})", p,
                              line_of(gates_section, gate_id), f"gates.{gate_id}")
    built = {gid: _build(p, gid, t, gates_section.get(gid)) for gid, t in settings_types.items()}
    lines = {(gid, str(key)): n for gid, section in gates_section.items() if isinstance(section, dict)
             for key in section if (n := line_of(section, key)) is not None}
    rules = []
    raw_rules = data.get("checks") or []
    if not isinstance(raw_rules, list):
        raise ConfigError("must be a list of {match, blocking}", p, line_of(data, "checks"), "checks")
    for i, rule in enumerate(raw_rules):
        line = raw_rules.item_lines[i] if hasattr(raw_rules, "item_lines") else None
        if not isinstance(rule, dict) or set(rule) != {"match", "blocking"}:
            raise ConfigError("each rule is {match: <glob>, blocking: true|false}", p, line, f"checks[{i}]")
        if not isinstance(rule["match"], str) or not isinstance(rule["blocking"], bool):
            raise ConfigError("match must be a string and blocking a boolean", p, line, f"checks[{i}]")
        rules.append(BlockingRule(rule["match"], rule["blocking"]))
    return Policy(path=p, name=str(data.get("name", Path(p).stem)), gates={gid: b[0] for gid, b in built.items()},
                  enabled=tuple(gid for gid, b in built.items() if b[1]), rules=tuple(rules), description=str(data.get("description", "")),
                  lines=lines, min_judged={gid: b[2] for gid, b in built.items() if b[2] is not None})
