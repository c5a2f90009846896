"""Strict JSON and clean UTF-8 for reports: NaN and infinities become strings, odd types become
lists/strings, and lone surrogates become U+FFFD.

A gate that catches NaN logits may well put a NaN in its metrics; `json.dumps` would write the
bare token `NaN`, which strict parsers (jq, JavaScript's JSON.parse, Go) reject. Reports write
"NaN", "Infinity" or "-Infinity" instead, as documented in docs/summary-schema.md.
"""

from __future__ import annotations

import json
import math
from enum import Enum
from typing import Any

from gatekeeper.text import utf8_safe


def to_jsonable(value: Any) -> Any:
    """Return a copy of `value` that `json.dumps(..., allow_nan=False)` accepts."""
    if isinstance(value, Enum):
        return to_jsonable(value.value)
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if isinstance(value, str):
        return utf8_safe(value)
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, dict):
        return {utf8_safe(str(k)): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return [to_jsonable(v) for v in sorted(value, key=str)]
    return str(value)


def dumps(value: Any, indent: int | None = None) -> str:
    """Serialise to strict JSON (UTF-8 text, keys in insertion order)."""
    return json.dumps(to_jsonable(value), indent=indent, ensure_ascii=False, allow_nan=False)
