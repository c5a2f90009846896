"""A matrix cell: one execution path, named by its axis values.

A cell's id is `axis=value` for every axis, in the order the matrix declares its axes, joined by
commas: `dtype=bfloat16,tp=2,fused_norm=on,prefix_caching=on`. Values appear as written, except
booleans, which read `on` / `off` (YAML's `on`, `true` and `yes` are all the same boolean). Axis
values are restricted to letters, digits and `_ . + -`, so an id needs no quoting in a shell, a
directory name or a CI job name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Union

Value = Union[str, int, float, bool]
VALUE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")


def render(value: Value) -> str:
    """A value as cell ids, selectors and declarations show it (booleans as on / off)."""
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def as_text(value: Value) -> str:
    """A value as a template fills it in (booleans as true / false, what engine flags take)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True)
class Cell:
    """One cell: its axis values (rendered, in the matrix's axis order), the candidate target it
    runs (a run-config target mapping), the execution path it declares, its merged policy
    fragment (None: the run's policy as it is), and the line it came from (an `include` entry,
    else the `axes` mapping)."""

    axes: tuple[tuple[str, str], ...]
    target: dict[str, Any] = field(default_factory=dict, compare=False)
    declared: tuple[tuple[str, str], ...] = ()
    policy: dict[str, Any] | None = field(default=None, compare=False)
    line: int | None = field(default=None, compare=False)

    @property
    def id(self) -> str:
        """The cell's stable, readable id (see the module docstring)."""
        return ",".join(f"{axis}={value}" for axis, value in self.axes)

    @property
    def values(self) -> dict[str, str]:
        """Axis -> rendered value."""
        return dict(self.axes)
