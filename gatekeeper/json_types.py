"""The type of the JSON documents gatekeeper writes: summary.json, records.jsonl, cell.json,
compare's and bisect's JSON, the live verdict, the perf history.

A producer returns a `JsonObject`, so mypy checks that only JSON-able values go in: a dataclass,
a set or a `Path` put into a document by mistake is a type error, not a `str(...)` in the file.
The containers are the read-only `Sequence` and `Mapping` (covariant), so a `list[str]`, a tuple
or a `dict[str, int]` fits as it is. `report/jsonable.py` still makes the text strict JSON (NaN
and infinities as strings) when the file is written.

Documents read *in* (a server's response, a user's YAML, a file another version wrote) stay
`dict[str, Any]` until they are parsed into a typed value: their shape is not known yet.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias, Union

JsonValue: TypeAlias = Union[None, bool, int, float, str, Sequence["JsonValue"], Mapping[str, "JsonValue"]]
"""Any JSON value gatekeeper produces (a tuple is written as an array)."""

JsonObject: TypeAlias = dict[str, JsonValue]
"""A JSON object gatekeeper produces: a document, or one object within one."""
