"""Typed gate settings: each gate declares a frozen dataclass of its settings with their defaults.

The policy loader (`policy.py`) builds it from the gate's section of a policy: an unknown key, a
value of the wrong type (judged against the default's type), or a value the dataclass refuses in
`__post_init__` (by raising `SettingError`) is a ConfigError naming the file, line and key.
"""

from __future__ import annotations

import dataclasses
from typing import Any


class SettingError(ValueError):
    """A setting's value is out of range or of the wrong form; `key` names the setting."""

    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key


def require(condition: bool, key: str, message: str) -> None:
    """Raise SettingError(key, message) unless `condition` holds (for `__post_init__`)."""
    if not condition:
        raise SettingError(key, message)


def defaults_of(settings_type: type) -> dict[str, Any]:
    """Every setting of a settings dataclass with its default value, in declaration order."""
    instance = settings_type()
    return {f.name: getattr(instance, f.name) for f in dataclasses.fields(settings_type)}


@dataclasses.dataclass(frozen=True)
class NoSettings:
    """The settings of a gate that has none."""
