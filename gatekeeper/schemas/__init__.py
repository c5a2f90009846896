"""JSON Schemas for what gatekeeper reads and writes, shipped with the package.

- `summary.schema.json`: summary.json (format gatekeeper.summary/1), written by hand beside
  `docs/summary-schema.md`;
- `policy.schema.json` and `run-config.schema.json`: generated from the code that loads them (each
  gate's settings dataclass; the run options and target kinds), so they cannot drift:
  `python -m gatekeeper.schemas` rewrites them and a test checks the shipped files are current.

Editors and CI can validate policies and run configs against them (e.g. a YAML language server's
`# yaml-language-server: $schema=...` line).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gatekeeper.json_types import JsonObject
from gatekeeper.config.settings import settings_schema

HERE = Path(__file__).resolve().parent
DRAFT = "https://json-schema.org/draft/2020-12/schema"


def load(name: str) -> dict[str, Any]:
    """A shipped schema by file name (e.g. "summary.schema.json")."""
    return json.loads((HERE / name).read_text(encoding="utf-8"))


def policy_schema(settings_types: dict[str, type]) -> JsonObject:
    """The policy file's schema from each gate's settings dataclass (types and ranges: see
    `gatekeeper.config.settings`)."""
    gates = {gate_id: settings_schema(settings) for gate_id, settings in sorted(settings_types.items())}
    return {
        "$schema": DRAFT, "$id": "https://gatekeeper.dev/schemas/policy.schema.json",
        "title": "gatekeeper gate policy (gates/*.yaml)", "type": "object",
        "additionalProperties": False,
        "properties": {
            "version": {"const": 1, "default": 1}, "name": {"type": "string"}, "description": {"type": "string"},
            "checks": {"type": "array", "items": {"type": "object", "required": ["match", "blocking"],
                                                  "additionalProperties": False,
                                                  "properties": {"match": {"type": "string"}, "blocking": {"type": "boolean"}}}},
            "gates": {"type": "object", "properties": gates, "additionalProperties": False},
        },
    }


def run_config_schema() -> JsonObject:
    """The run config's schema from the run options and the target kinds."""
    from gatekeeper.config.option_table import OPTIONS
    from gatekeeper.targets.interface import DECLARABLE
    from gatekeeper.targets.spec import _KEYS, KEY_SCHEMAS

    declare: JsonObject = {"type": "object", "properties": {**{k: {"type": ["string", "integer"]} for k in DECLARABLE},
                                                            "labels": {"type": "object", "additionalProperties": {"type": "string"}}},
                           "patternProperties": {"^label\\.": {"type": "string"}}, "additionalProperties": False}
    key_types: JsonObject = {**KEY_SCHEMAS, "declare": declare}
    kinds: list[JsonObject] = [
        {"type": "object", "required": ["kind"] + (["url"] if kind == "url" else ["command"] if kind == "launch" else []),
         "additionalProperties": False,
         "properties": {k: ({"const": kind} if k == "kind" else key_types[k]) for k in sorted(keys)}}
        for kind, keys in sorted(_KEYS.items())]
    target: JsonObject = {"oneOf": [{"type": "string", "pattern": "^(bundled(:(reference|optimized))?|https?://.+)$"}, *kinds]}
    props: JsonObject = {}
    for o in OPTIONS:
        if o.name in ("reference", "candidate"):
            props[o.name] = {**target, "description": o.help}
        elif o.schema.get("type") == "array":  # a list, or the same as a comma-separated string
            props[o.name] = {"oneOf": [o.schema, {"type": "string", "minLength": 1}], "description": o.help}
        elif o.schema:
            props[o.name] = {**o.schema, "description": o.help}
        elif isinstance(o.default, list):
            props[o.name] = {"oneOf": [{"type": "array", "items": {"type": "string"}}, {"type": "string"}], "description": o.help}
        elif isinstance(o.default, dict):
            props[o.name] = {"type": "object", "description": o.help}
        elif isinstance(o.default, bool):
            props[o.name] = {"type": "boolean", "description": o.help}
        elif isinstance(o.default, (int, float)):
            props[o.name] = {"type": "number" if isinstance(o.default, float) else "integer", "description": o.help}
        else:
            props[o.name] = {"type": ["string", "null"], "description": o.help}
    return {"$schema": DRAFT, "$id": "https://gatekeeper.dev/schemas/run-config.schema.json",
            "title": "gatekeeper run config (-c run.yaml)", "type": "object", "additionalProperties": False,
            "properties": props}


def generated(settings_types: dict[str, type]) -> dict[str, JsonObject]:
    """The generated schemas by file name, from each gate's settings dataclass (`settings_types`:
    the gate registry's, passed in so that reading a shipped schema imports no gate)."""
    return {"policy.schema.json": policy_schema(settings_types), "run-config.schema.json": run_config_schema()}


def main(settings_types: dict[str, type]) -> None:
    """Rewrite the generated schema files (`python -m gatekeeper.schemas`)."""
    for name, schema in generated(settings_types).items():
        (HERE / name).write_text(json.dumps(schema, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {HERE / name}")
