"""The parsers of the run options' values: each takes what a run config, a GATEKEEPER_*
variable or a flag gave (a string, a list, a mapping) and returns the option's type, or raises
ValueError saying what is wrong (resolve() adds the file and line, the variable or the flag)."""

from __future__ import annotations

import re
from typing import Any

from gatekeeper.config.schema_check import shown

# A target's key variable, as a target's own `api_key_env` (targets/spec.py KEY_SCHEMAS) takes it.
KEY_ENV_SCHEMA = {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$",
                  "description": "the NAME of an environment variable; the key itself never goes in a file or a flag"}
TEXT_SCHEMA = {"type": "string", "minLength": 1}


def as_list(value: Any) -> list[str]:
    """A list of strings, from a list or a comma-separated string."""
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, (list, tuple)) and all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value):
        return [str(v).strip() for v in value]
    raise ValueError("must be a list or a comma-separated string")


def as_gates(value: Any) -> list[str]:
    """Gate ids (as_list), at least one."""
    names = as_list(value)
    if not names:
        raise ValueError("names no gate: give gate ids (e.g. startup,numerics) or leave it unset to run every gate "
                         "the policy enables")
    return names


def as_int(value: Any) -> int:
    """An integer, or a string holding one."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise ValueError(f"must be an integer, not {shown(value)}")


def as_number(value: Any) -> float:
    """A number, or a string holding one."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            pass
    raise ValueError(f"must be a number, not {shown(value)}")


def as_opts(value: Any) -> dict[str, str]:
    """KEY=VALUE pairs (a mapping, a list of them or a comma-separated string); `-` in a key is `_`."""
    if isinstance(value, dict):
        return {str(k): str(v) for k, v in value.items()}
    out = {}
    for item in as_list(value):
        key, sep, val = item.partition("=")
        if not sep or not key:
            raise ValueError(f"{item!r} is not KEY=VALUE")
        out[key.strip().replace("-", "_")] = val.strip()
    return out


def as_env_name(value: Any) -> str:
    """An environment variable's name. The message never repeats the value: a user who pasted
    the key itself here must not see it echoed into a CI log."""
    name = value.strip() if isinstance(value, str) else ""
    if not re.fullmatch(KEY_ENV_SCHEMA["pattern"], name):
        raise ValueError("must be the NAME of an environment variable (letters, digits and _, not starting with a "
                         "digit) that holds the key, not the key itself")
    return name


def as_text(value: Any) -> str:
    """A non-empty string, stripped."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"must be a non-empty string, not {shown(value)}")
    return value.strip()


def as_target(value: Any) -> Any:
    """A target as given (a string or a mapping): `targets/spec.parse_target` reads it when the
    plan is built, naming the file it came from."""
    return value
