"""One evidence item as the HTML pages show it, and metric values as short strings.

`evidence_view(ev)` turns a typed evidence value (gatekeeper/evidence.py) into an `EvidenceView`:
a text pair pre-cut at its first difference, a table of formatted cells, a ready SVG chart
(charts.py), a log or raw JSON. `fmt_value` is how every number a view builds is written: at most
four significant digits, inside lists and objects too, so no table shows a 17-digit float;
`fmt_metric` adds the unit a metric's name implies (`…_s`: a duration), `fmt_seconds` writes a
duration, and `clip` cuts a reason to the length a line of the page holds.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from gatekeeper import evidence
from gatekeeper.evidence import Evidence
from gatekeeper.report import charts
from gatekeeper.report.jsonable import to_jsonable
from gatekeeper.report.textdiff import TextDiff, text_pair

MAX_LOG_LINES = 400
MAX_TABLE_ROWS = 500
MAX_JSON_CHARS = 300


@dataclass(frozen=True)
class EvidenceView:
    """One evidence item; `kind` is one of text_pair, table, chart, log, json, or elsewhere (drawn in
    another place of the page, which `note` names)."""

    kind: str
    title: str
    pair: TextDiff | None = None
    columns: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    chart: Markup | None = None
    text: str = ""
    note: str = ""


def _rounded(value: Any) -> Any:
    """`value` with every finite float inside it cut to four significant digits."""
    if isinstance(value, float) and math.isfinite(value):
        return float(f"{value:.4g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_rounded(v) for v in value]
    return value


def fmt_value(value: Any) -> str:
    """A metric value as a short string (numbers to four significant digits, lists and objects as
    compact JSON of rounded numbers, cut at 300 characters)."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return charts.fmt_num(value)
    if isinstance(value, (list, tuple, dict)):
        text = json.dumps(to_jsonable(_rounded(value)), ensure_ascii=False)
        return text if len(text) <= MAX_JSON_CHARS else text[:MAX_JSON_CHARS - 1] + "…"
    return str(value)


def fmt_metric(key: str, value: Any) -> str:
    """A metric's value with the unit its name implies: a number under a key ending in `_s` (not
    `_per_s`) is a duration, shown in ms below a second, else in s; anything else as `fmt_value`."""
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if is_number and key.endswith("_s") and not key.endswith("_per_s"):
        return f"{value * 1000:.4g} ms" if abs(value) < 1 else f"{value:.4g} s"
    return fmt_value(value)


def fmt_seconds(value: float | None) -> str:
    """Seconds with a unit, or a dash."""
    return "–" if value is None else f"{value:.3f} s"


def clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, the last one an ellipsis where it was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def evidence_view(ev: Evidence, status: str = "") -> EvidenceView:
    """Turn one piece of evidence into its view, by kind; evidence that could not be read
    back (`evidence.Unreadable`) shows as raw JSON with the reason. `status` (its check's) colours
    the rows of an intervals chart ("": grey)."""
    if isinstance(ev, evidence.TextPair):
        return EvidenceView("text_pair", ev.title, pair=text_pair(ev.title, ev.data))
    if isinstance(ev, evidence.Table):
        rows = [tuple(fmt_value(c) for c in row) for row in ev.rows]
        note = f"{len(rows) - MAX_TABLE_ROWS} more rows not shown" if len(rows) > MAX_TABLE_ROWS else ""
        return EvidenceView("table", ev.title, columns=ev.columns, rows=tuple(rows[:MAX_TABLE_ROWS]), note=note)
    if isinstance(ev, evidence.Histogram):
        return EvidenceView("chart", ev.title, chart=charts.histogram_svg(list(ev.values), ev.label or ev.title, ev.threshold))
    if isinstance(ev, evidence.Series):
        chart = charts.line_chart_svg(list(ev.x), {k: list(v) for k, v in ev.series.items()}, ev.x_label, ev.y_label)
        return EvidenceView("chart", ev.title, chart=chart)
    if isinstance(ev, evidence.Heatmap):
        labels = None if ev.labels is None else [list(r) for r in ev.labels]
        chart = charts.heatmap_svg(list(ev.rows), list(ev.columns), [list(v) for v in ev.values], labels, ev.title)
        return EvidenceView("chart", ev.title, chart=chart)
    if isinstance(ev, evidence.Intervals):
        marked = [(r, status) for r in ev.rows]
        return EvidenceView("chart", ev.title, chart=charts.intervals_svg(marked, ev.reference, ev.x_label, ev.title))
    if isinstance(ev, evidence.Log):
        note = f"first {len(ev.lines) - MAX_LOG_LINES} lines not shown" if len(ev.lines) > MAX_LOG_LINES else ""
        return EvidenceView("log", ev.title, text="\n".join(ev.lines[-MAX_LOG_LINES:]), note=note)
    raw = json.dumps(to_jsonable(ev.data), indent=2, ensure_ascii=False)
    note = f"{ev.why}; raw data below" if isinstance(ev, evidence.Unreadable) else ""
    return EvidenceView("json", ev.title, text=raw, note=note)
