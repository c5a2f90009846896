"""Selectors: partial mappings over a matrix's axes, used by `exclude`, and by the `when` of
policy and expectation rules.

    {dtype: bfloat16, tp: [2, 4]}     # dtype is bfloat16 and tp is 2 or 4

A cell matches when, for every axis the selector names, its value is one of those listed (a
scalar is a list of one). Values compare as cell ids show them, so `tp: "2"` and `tp: 2` are the
same, and so are `fused_norm: on` and `fused_norm: true`. A selector naming an axis the matrix
lacks, or a value no cell can have, is an error: it would silently select nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gatekeeper.config.yaml_lines import line_of
from gatekeeper.errors import ConfigError
from gatekeeper.matrix.cell import render


@dataclass(frozen=True)
class Selector:
    """Axis -> the values that match, for the axes named; no axes matches every cell."""

    values: tuple[tuple[str, frozenset[str]], ...] = ()

    def matches(self, cell: Mapping[str, str]) -> bool:
        """Whether a cell (axis -> rendered value) has one of the listed values on every axis named."""
        return all(cell.get(axis) in allowed for axis, allowed in self.values)

    def describe(self) -> str:
        """The selector as `axis=value` terms (`a|b` for alternatives), or `every cell`."""
        return ", ".join(f"{axis}={'|'.join(sorted(v))}" for axis, v in self.values) or "every cell"


def parse_selector(raw: Any, where: str, path: str, line: int | None, known: Mapping[str, list[str]]) -> Selector:
    """A Selector from a YAML mapping; `known` maps each axis to every value a cell can have."""
    if not isinstance(raw, dict) or not raw:
        raise ConfigError("must be a non-empty mapping of axis -> value (or list of values)", path, line_of(raw) or line, where)
    out = []
    for axis, value in raw.items():
        at, key = line_of(raw, axis), f"{where}.{axis}"
        if axis not in known:
            raise ConfigError(f"no such axis (axes: {', '.join(known)})", path, at, key)
        items = value if isinstance(value, list) else [value]
        if not items:
            raise ConfigError("must name at least one value", path, at, key)
        rendered = set()
        for item in items:
            if isinstance(item, (dict, list)) or item is None:
                raise ConfigError("must be a value or a list of values", path, at, key)
            if render(item) not in known[axis]:
                raise ConfigError(f"{render(item)!r} is not a value of axis {axis} (values: {', '.join(known[axis])})",
                                  path, at, key)
            rendered.add(render(item))
        out.append((str(axis), frozenset(rendered)))
    return Selector(tuple(out))
