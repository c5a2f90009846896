"""Evidence: what a check shows a reviewer, one frozen type per kind of rendering.

Gates build these typed values, so a renderer never has to guess at a payload's shape. Each kind
has a `kind` name and a JSON form (`data`), which is what records.jsonl stores; `from_json`
turns that form back into a typed value (for records read back, e.g. when runs are merged) and
returns `Unreadable` — shown as raw JSON with the reason — for a kind it does not know or a
payload of the wrong shape.

Kinds: text_pair (side-by-side text, first differing character marked), table, histogram, series
(line chart), heatmap (a grid coloured red 0 to green 1, grey for None), intervals (estimates with
their intervals against a limit: a forest plot), log, json.

A gate marks the charts that carry its result `is_key=True` (gate 2's logprob-delta histogram,
gate 4's decay curve and needle heatmap, gate 5's sequential evidence per canary stage, the
performance gate's ratios with their intervals and its capacity curves): the HTML reports show
those under "Key charts", before any check. The mark is stored with the evidence (`"key": true`
in records.jsonl) so a resumed run's report keeps it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from gatekeeper import json_types
from gatekeeper.json_types import JsonObject


@dataclass(frozen=True)
class Evidence:
    """Base of every kind: a title, a kind name, a JSON form, and whether it is a key chart
    (`is_key`: one that carries its gate's result, shown before the checks)."""

    title: str
    is_key: bool = field(default=False, kw_only=True)
    kind: ClassVar[str] = ""

    @property
    def data(self) -> json_types.JsonValue:
        """The kind's JSON form (records.jsonl's `data`)."""
        raise NotImplementedError


@dataclass(frozen=True)
class TextPair(Evidence):
    """The reference's and the candidate's text side by side; `divergence` is the first differing
    character (computed when None), `prompt` what was asked."""

    reference: str = ""
    candidate: str = ""
    divergence: int | None = None
    prompt: str | None = None
    kind: ClassVar[str] = "text_pair"

    @property
    def data(self) -> JsonObject:
        """{"reference", "candidate", "divergence", "prompt"}."""
        return {"reference": self.reference, "candidate": self.candidate, "divergence": self.divergence,
                "prompt": self.prompt}


@dataclass(frozen=True)
class Table(Evidence):
    """Rows of cells under named columns."""

    columns: tuple[str, ...] = ()
    rows: tuple[tuple[Any, ...], ...] = ()
    kind: ClassVar[str] = "table"

    def __init__(self, title: str, columns: Sequence[Any], rows: Sequence[Sequence[Any]], *, is_key: bool = False) -> None:
        object.__setattr__(self, "title", title)
        object.__setattr__(self, "is_key", is_key)
        object.__setattr__(self, "columns", tuple(str(c) for c in columns))
        object.__setattr__(self, "rows", tuple(tuple(r) for r in rows))

    @property
    def data(self) -> JsonObject:
        """{"columns", "rows"}."""
        return {"columns": list(self.columns), "rows": [list(r) for r in self.rows]}


@dataclass(frozen=True)
class Histogram(Evidence):
    """A distribution of values, with an optional threshold line."""

    values: tuple[float, ...] = ()
    label: str = ""
    threshold: float | None = None
    kind: ClassVar[str] = "histogram"

    def __init__(self, title: str, values: Sequence[float], label: str = "", threshold: float | None = None, *,
                 is_key: bool = False) -> None:
        object.__setattr__(self, "title", title)
        object.__setattr__(self, "is_key", is_key)
        object.__setattr__(self, "values", tuple(values))
        object.__setattr__(self, "label", label)
        object.__setattr__(self, "threshold", threshold)

    @property
    def data(self) -> JsonObject:
        """{"values", "label", "threshold"}."""
        return {"values": list(self.values), "label": self.label, "threshold": self.threshold}


@dataclass(frozen=True)
class Series(Evidence):
    """Lines over a shared x axis: series name -> y values."""

    x: tuple[float, ...] = ()
    series: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    x_label: str = "x"
    y_label: str = "y"
    kind: ClassVar[str] = "series"

    def __init__(self, title: str, x: Sequence[float], series: Mapping[str, Sequence[float]], x_label: str = "x",
                 y_label: str = "y", *, is_key: bool = False) -> None:
        object.__setattr__(self, "title", title)
        object.__setattr__(self, "is_key", is_key)
        object.__setattr__(self, "x", tuple(x))
        object.__setattr__(self, "series", {str(k): tuple(v) for k, v in series.items()})
        object.__setattr__(self, "x_label", x_label)
        object.__setattr__(self, "y_label", y_label)

    @property
    def data(self) -> JsonObject:
        """{"x", "series", "x_label", "y_label"}."""
        return {"x": list(self.x), "series": {k: list(v) for k, v in self.series.items()}, "x_label": self.x_label,
                "y_label": self.y_label}


@dataclass(frozen=True)
class Heatmap(Evidence):
    """A grid of values in [0, 1] (None: grey) with row and column names and optional cell labels."""

    rows: tuple[str, ...] = ()
    columns: tuple[str, ...] = ()
    values: tuple[tuple[float | None, ...], ...] = ()
    labels: tuple[tuple[str, ...], ...] | None = None
    kind: ClassVar[str] = "heatmap"

    def __init__(self, title: str, rows: Sequence[Any], columns: Sequence[Any], values: Sequence[Sequence[float | None]],
                 labels: Sequence[Sequence[str]] | None = None, *, is_key: bool = False) -> None:
        object.__setattr__(self, "title", title)
        object.__setattr__(self, "is_key", is_key)
        object.__setattr__(self, "rows", tuple(str(r) for r in rows))
        object.__setattr__(self, "columns", tuple(str(c) for c in columns))
        object.__setattr__(self, "values", tuple(tuple(v) for v in values))
        object.__setattr__(self, "labels", None if labels is None else tuple(tuple(str(x) for x in r) for r in labels))

    @property
    def data(self) -> JsonObject:
        """{"rows", "columns", "values", "labels"}."""
        return {"rows": list(self.rows), "columns": list(self.columns), "values": [list(v) for v in self.values],
                "labels": None if self.labels is None else [list(r) for r in self.labels]}


@dataclass(frozen=True)
class Interval:
    """One row of `Intervals`: an estimate, its interval, and the limit it is judged against
    (None: no limit)."""

    label: str
    estimate: float
    low: float
    high: float
    limit: float | None = None


@dataclass(frozen=True)
class Intervals(Evidence):
    """Estimates with their intervals, one row each, beside a `reference` value (no change) and
    each row's limit: e.g. candidate/baseline ratios with their confidence intervals and budgets."""

    rows: tuple[Interval, ...] = ()
    reference: float = 1.0
    x_label: str = "ratio"
    kind: ClassVar[str] = "intervals"

    @property
    def data(self) -> JsonObject:
        """{"rows": [{"label", "estimate", "low", "high", "limit"}], "reference", "x_label"}."""
        return {"rows": [{"label": r.label, "estimate": r.estimate, "low": r.low, "high": r.high, "limit": r.limit}
                         for r in self.rows], "reference": self.reference, "x_label": self.x_label}


@dataclass(frozen=True)
class Log(Evidence):
    """Log lines, oldest first."""

    lines: tuple[str, ...] = ()
    kind: ClassVar[str] = "log"

    def __init__(self, title: str, lines: Sequence[Any], *, is_key: bool = False) -> None:
        object.__setattr__(self, "title", title)
        object.__setattr__(self, "is_key", is_key)
        object.__setattr__(self, "lines", tuple(str(line) for line in lines))

    @property
    def data(self) -> JsonObject:
        """{"lines"}."""
        return {"lines": list(self.lines)}


@dataclass(frozen=True)
class JsonValue(Evidence):
    """Any JSON value, shown as it is."""

    value: Any = None
    kind: ClassVar[str] = "json"

    @property
    def data(self) -> Any:
        """The value itself."""
        return self.value


@dataclass(frozen=True)
class Unreadable(Evidence):
    """Evidence read back that is not one of the kinds, or not in its kind's shape: shown as raw
    JSON with `why`."""

    raw_kind: str = ""
    value: Any = None
    why: str = ""
    kind: ClassVar[str] = "unreadable"

    @property
    def data(self) -> Any:
        """The payload as it was read."""
        return self.value


def from_json(kind: str, title: str, data: Any, is_key: bool = False) -> Evidence:
    """The typed evidence for a JSON form (`Unreadable` when it is not one); `is_key` is the
    stored key-chart mark."""
    if kind == "json":
        return JsonValue(title, data, is_key=is_key)
    if not isinstance(data, dict):
        return Unreadable(title, kind, data, f"malformed {kind!r} evidence")
    try:
        if kind == "text_pair":
            return TextPair(title, str(data.get("reference") or ""), str(data.get("candidate") or ""),
                            data.get("divergence"), data.get("prompt"), is_key=is_key)
        if kind == "table":
            return Table(title, data["columns"], data["rows"], is_key=is_key)
        if kind == "histogram":
            return Histogram(title, [float(v) for v in data["values"]], str(data.get("label") or ""), data.get("threshold"),
                             is_key=is_key)
        if kind == "series":
            return Series(title, data["x"], dict(data["series"]), str(data.get("x_label", "x")), str(data.get("y_label", "y")),
                          is_key=is_key)
        if kind == "heatmap":
            return Heatmap(title, data["rows"], data["columns"], data["values"], data.get("labels"), is_key=is_key)
        if kind == "intervals":
            rows = tuple(Interval(str(r["label"]), float(r["estimate"]), float(r["low"]), float(r["high"]),
                                  None if r.get("limit") is None else float(r["limit"])) for r in data["rows"])
            return Intervals(title, rows, float(data.get("reference", 1.0)), str(data.get("x_label", "ratio")), is_key=is_key)
        if kind == "log":
            return Log(title, data["lines"], is_key=is_key)
    except (KeyError, TypeError, ValueError) as e:
        return Unreadable(title, kind, data, f"evidence of kind {kind!r} could not be drawn ({type(e).__name__}: {e})")
    return Unreadable(title, kind, data, f"unknown evidence kind {kind!r}")
