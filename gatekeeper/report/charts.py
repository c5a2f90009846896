"""Inline SVG charts for the HTML reports, drawn in Python so the page needs no script or URL.

Each function returns `markupsafe.Markup` (safe to drop into an autoescaped template); every
piece of text inside goes through `markupsafe.escape`. Charts scale to their container
(`viewBox` plus `width="100%"`), so they never make the page scroll sideways. Non-finite
values are not plotted; the caption counts them instead.
"""

from __future__ import annotations

import math
from typing import Sequence

from markupsafe import Markup, escape

from gatekeeper.evidence import Interval

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b")
DASHES = ("", "7 4", "2 3", "10 3 2 3")  # one per series, so coinciding lines stay apart
MAX_MARKERS = 30  # a line with more points is drawn without a marker on each
W, H = 640, 240  # viewBox size
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 16, 44


def fmt_num(value: float) -> str:
    """A short human-readable number for axis ticks and labels."""
    if value == 0:
        return "0"
    if abs(value) >= 1e6 or abs(value) < 0.001:
        return f"{value:.2e}"
    if abs(value) >= 1000:
        return f"{value:.0f}"
    return f"{value:.4g}"


def _svg(body: list[str], label: str, height: int = H) -> Markup:
    return Markup(
        f'<svg class="chart" viewBox="0 0 {W} {height}" width="100%" role="img" '
        f'aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg">'
        f'<title>{escape(label)}</title>{"".join(body)}</svg>'
    )


def _text(x: float, y: float, s: str, anchor: str = "middle", cls: str = "") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" class="{cls}">{escape(s)}</text>'


def _axes(x_label: str, y_label: str, x_lo: float, x_hi: float, y_hi: float, y_lo: float = 0.0,
          x_ticks: Sequence[float] = (), mid_label: bool = True) -> list[str]:
    """Both axes with their end values (and `x_ticks` between them), the labels, and a faint
    mid-height grid line (labelled when `mid_label`)."""
    x0, x1, y0, y1 = LEFT, W - RIGHT, H - BOTTOM, TOP
    out = [
        f'<line x1="{x0}" y1="{(y0 + y1) / 2:.1f}" x2="{x1}" y2="{(y0 + y1) / 2:.1f}" class="grid"/>',
        f'<line x1="{x0}" y1="{y0}" x2="{x1}" y2="{y0}" class="axis"/>',
        f'<line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y1}" class="axis"/>',
        _text((x0 + x1) / 2, H - 6, x_label),
        _text(x0 - 6, y1 + 10, fmt_num(y_hi), "end"),
        *([_text(x0 - 6, (y0 + y1) / 2 + 4, fmt_num((y_lo + y_hi) / 2), "end")] if mid_label else []),
        _text(x0 - 6, y0, fmt_num(y_lo), "end"),
        f'<text x="14" y="{(y0 + y1) / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {(y0 + y1) / 2:.1f})">{escape(y_label)}</text>',
    ]
    ticks = sorted({x_lo, x_hi, *(t for t in x_ticks if x_lo <= t <= x_hi)})
    for t in ticks:
        sx = x0 + (x1 - x0) * (t - x_lo) / (x_hi - x_lo) if x_hi > x_lo else x0
        anchor = "start" if t == x_lo and len(ticks) > 1 else "end" if t == x_hi and len(ticks) > 1 else "middle"
        out.append(_text(sx, y0 + 16, fmt_num(t), anchor))
    return out


def _ok(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _finite(values: Sequence[object]) -> list[float]:
    return [float(v) for v in values if _ok(v)]  # type: ignore[arg-type]


def histogram_svg(values: Sequence[float], label: str, threshold: float | None = None, bins: int = 30,
                  x_range: tuple[float, float] | None = None) -> Markup:
    """A histogram of `values` with an optional dashed threshold line; `x_range` fixes the x axis
    (so that histograms shown side by side share it)."""
    finite = _finite(values)
    dropped = len(values) - len(finite)
    if not finite:
        return Markup(f'<p class="muted">{escape(label)}: no finite values ({dropped} non-finite).</p>')
    lo, hi = x_range if x_range is not None else (min(finite), max(finite))
    lo, hi = min(lo, min(finite)), max(hi, max(finite))
    if threshold is not None and math.isfinite(threshold):
        lo, hi = min(lo, threshold), max(hi, threshold)
    if hi == lo:
        hi = lo + 1.0
    counts = [0] * bins
    for v in finite:
        counts[min(int((v - lo) / (hi - lo) * bins), bins - 1)] += 1
    top = max(counts)
    plot_w, plot_h = W - LEFT - RIGHT, H - TOP - BOTTOM
    bar_w = plot_w / bins
    body = _axes(label, "count", lo, hi, top, mid_label=False)
    for i, n in enumerate(counts):
        if n == 0:
            continue
        h = max(2.0, plot_h * n / top)  # a tail bin of one value stays visible
        x, y = LEFT + i * bar_w, H - BOTTOM - h
        body.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(bar_w - 1, 1):.1f}" height="{h:.1f}" class="bar">'
            f"<title>{escape(fmt_num(lo + i * (hi - lo) / bins))}–"
            f"{escape(fmt_num(lo + (i + 1) * (hi - lo) / bins))}: {n}</title></rect>"
        )
    if threshold is not None and math.isfinite(threshold):
        tx = LEFT + plot_w * (threshold - lo) / (hi - lo)
        body.append(f'<line x1="{tx:.1f}" y1="{TOP}" x2="{tx:.1f}" y2="{H - BOTTOM}" class="threshold"/>')
        left_side = tx > LEFT + plot_w / 2  # keep the label inside the chart
        body.append(_text(tx - 4 if left_side else tx + 4, TOP + 10, f"threshold {fmt_num(threshold)}",
                          "end" if left_side else "start", "thr"))
    ordered = sorted(finite)
    median = ordered[len(ordered) // 2]
    note = f"{len(finite)} values, median {fmt_num(median)}, max {fmt_num(ordered[-1])}"
    note += f"; {dropped} non-finite not plotted" if dropped else ""
    return _svg(body, f"{label} ({note})") + Markup(f'<p class="caption">{escape(note)}</p>')


def bar_chart_svg(items: Sequence[tuple[str, float, str]], label: str) -> Markup:
    """Horizontal bars of fractions in [0, 1]: (name, fraction, annotation) per row."""
    if not items:
        return Markup("")
    row_h, label_w = 24, 170
    height = TOP + row_h * len(items) + 8
    plot_w = W - label_w - 120  # room on the right for "100% (123/123)"
    body = []
    for i, (name, frac, note) in enumerate(items):
        y = TOP + i * row_h
        frac = min(max(frac, 0.0), 1.0)
        cls = "bar" if frac >= 1.0 else ("bar warn" if frac >= 0.5 else "bar bad")
        body.append(_text(label_w - 8, y + 15, name[:28], "end"))
        body.append(f'<rect x="{label_w}" y="{y + 3}" width="{plot_w}" height="{row_h - 8}" class="track"/>')
        body.append(
            f'<rect x="{label_w}" y="{y + 3}" width="{plot_w * frac:.1f}" height="{row_h - 8}" class="{cls}">'
            f"<title>{escape(name)}: {escape(note)}</title></rect>"
        )
        body.append(_text(label_w + plot_w + 6, y + 15, f"{frac:.0%} {note}", "start"))
    return _svg(body, label, height)


def line_chart_svg(x: Sequence[float], series: dict[str, Sequence[float]], x_label: str, y_label: str) -> Markup:
    """One line per named series over shared x values, with a legend under the plot.

    Each series has its own colour, dash pattern and marker shape, and the first is drawn wide
    and pale under the others: lines that coincide (a candidate that matches its reference
    exactly) stay visible as a dashed line inside a band, not one line hiding the other."""
    xs = _finite(x)
    ys = [v for vals in series.values() for v in _finite(vals)]
    if len(xs) < 1 or not ys:
        return Markup(f'<p class="muted">{escape(y_label)}: no data.</p>')
    x_lo, x_hi = min(xs), max(xs)
    y_lo, y_hi = min(0.0, min(ys)), max(ys)
    x_hi = x_hi if x_hi > x_lo else x_lo + 1
    y_hi = y_hi if y_hi > y_lo else y_lo + 1
    plot_w, plot_h = W - LEFT - RIGHT, H - TOP - BOTTOM

    def px(xv: float, yv: float) -> tuple[float, float]:
        return LEFT + plot_w * (xv - x_lo) / (x_hi - x_lo), H - BOTTOM - plot_h * (yv - y_lo) / (y_hi - y_lo)

    ticks = sorted(set(xs)) if len(set(xs)) <= 12 else ()
    body = _axes(x_label, y_label, x_lo, x_hi, y_hi, y_lo, ticks)
    columns = 3 if max(len(str(name)) for name in series) <= 26 else 2
    legend_w = (W - LEFT - 10) // columns
    legend_rows = (len(series) + columns - 1) // columns
    for i, (name, vals) in enumerate(series.items()):
        color, dash = PALETTE[i % len(PALETTE)], DASHES[i % len(DASHES)]
        width, opacity = (5, 0.45) if i == 0 and len(series) > 1 else (2, 1.0)
        pts = [px(float(a), float(b)) + (float(b),) for a, b in zip(x, vals, strict=False) if _ok(a) and _ok(b)]
        style = f'stroke="{color}" stroke-width="{width}" stroke-opacity="{opacity}"' + (f' stroke-dasharray="{dash}"' if dash else "")
        if pts:
            coords = " ".join(f"{sx:.1f},{sy:.1f}" for sx, sy, _ in pts)
            body.append(f'<polyline points="{coords}" fill="none" {style}/>')
            for sx, sy, value in pts if len(pts) <= MAX_MARKERS else ():
                body.append(_marker(i, sx, sy, color, f"{name}: {fmt_num(value)}"))
        lx, ly = LEFT + 10 + legend_w * (i % columns), H + 6 + 18 * (i // columns)
        body.append(f'<line x1="{lx}" y1="{ly + 5}" x2="{lx + 26}" y2="{ly + 5}" fill="none" {style}/>')
        body.append(_marker(i, lx + 13, ly + 5, color, str(name)))
        body.append(_text(lx + 32, ly + 9, str(name)[:legend_w // 6 - 6] + ("" if pts else " (no data)"), "start"))
    return _svg(body, f"{y_label} by {x_label}", H + 8 + 18 * legend_rows)


def _marker(i: int, x: float, y: float, color: str, tip: str) -> str:
    """Series `i`'s marker at (x, y): a circle, square, triangle or diamond, with a tooltip."""
    title = f"<title>{escape(tip)}</title>"
    shape = i % 4
    if shape == 0:
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{color}">{title}</circle>'
    if shape == 1:
        return f'<rect x="{x - 3:.1f}" y="{y - 3:.1f}" width="6" height="6" fill="#fff" stroke="{color}" stroke-width="2">{title}</rect>'
    points = ((x, y - 4.5), (x + 4.5, y + 3.5), (x - 4.5, y + 3.5)) if shape == 2 else \
        ((x, y - 5), (x + 5, y), (x, y + 5), (x - 5, y))
    coords = " ".join(f"{a:.1f},{b:.1f}" for a, b in points)
    return f'<polygon points="{coords}" fill="{color}">{title}</polygon>'


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[:n - 1] + "…"


def heatmap_svg(rows: Sequence[str], columns: Sequence[str], values: Sequence[Sequence[object]],
                labels: Sequence[Sequence[str]] | None, label: str) -> Markup:
    """A grid of cells coloured by value in [0, 1] (red 0 → green 1; grey when not a number),
    each with its text label: e.g. a needle grid of prompt length × depth."""
    if not rows or not columns:
        return Markup(f'<p class="muted">{escape(label)}: no data.</p>')
    longest = max(len(str(r)) for r in rows)
    row_h, label_w = 26, 110 if longest <= 16 else 160  # room for "tool_enforced · streamed"
    cell_w = (W - label_w - RIGHT) / len(columns)
    height = TOP + 18 + row_h * len(rows) + 8
    body = [_text(label_w + cell_w * (j + 0.5), TOP + 10, str(c)[:16]) for j, c in enumerate(columns)]
    for i, name in enumerate(rows):
        y = TOP + 18 + i * row_h
        body.append(_text(label_w - 8, y + 17, _clip(str(name), 16 if label_w == 110 else 26), "end"))
        for j in range(len(columns)):
            v = values[i][j] if j < len(values[i]) else None
            if _ok(v):
                f = min(max(float(v), 0.0), 1.0)  # type: ignore[arg-type]
                fill = f"rgb({int(214 - 170 * f)},{int(39 + 121 * f)},{int(40 + 4 * f)})"
            else:
                fill = "#bbbbbb"
            text = labels[i][j] if labels and j < len(labels[i]) else ("" if not _ok(v) else fmt_num(float(v)))  # type: ignore[arg-type]
            x = label_w + j * cell_w
            body.append(f'<rect x="{x + 1:.1f}" y="{y + 1}" width="{cell_w - 2:.1f}" height="{row_h - 2}" fill="{fill}">'
                        f"<title>{escape(str(name))}, {escape(str(columns[j]))}: {escape(text)}</title></rect>")
            body.append(f'<text x="{x + cell_w / 2:.1f}" y="{y + 17}" text-anchor="middle" fill="#fff">{escape(text)}</text>')
    return _svg(body, label, height)


STATUS_COLOURS = {"PASS": "#1a7f37", "FAIL": "#cf222e", "WARN": "#9a6700", "UNDECIDED": "#bf8700", "ERROR": "#8250df"}


def intervals_svg(rows: Sequence[tuple[Interval, str]], reference: float, x_label: str, label: str) -> Markup:
    """A forest plot: per row its label, its interval as a bar, its estimate as a dot coloured
    by the row's status ("" for none), its limit as a red tick, and a dashed line at `reference`
    (no change) through all rows."""
    if not rows:
        return Markup(f'<p class="muted">{escape(label)}: no intervals.</p>')
    row_h, label_w, status_w = 26, 300, 92
    ends = [v for r, _ in rows for v in (r.low, r.high, r.estimate, r.limit) if v is not None and math.isfinite(v)]
    lo, hi = min([reference, *ends]), max([reference, *ends])
    pad = (hi - lo) * 0.08 or 0.05
    lo, hi = lo - pad, hi + pad
    x0, x1 = label_w, W - status_w
    y_end = TOP + 14 + row_h * len(rows)

    def sx(v: float) -> float:
        return x0 + (x1 - x0) * (v - lo) / (hi - lo)

    ref_x = sx(reference)
    body = [f'<line x1="{ref_x:.1f}" y1="{TOP + 6}" x2="{ref_x:.1f}" y2="{y_end}" class="ref"/>',
            _text(ref_x, TOP + 2, f"{fmt_num(reference)} (no change)", "middle", "muted"),
            f'<line x1="{x0}" y1="{y_end}" x2="{x1}" y2="{y_end}" class="axis"/>',
            _text(x0, y_end + 14, fmt_num(lo), "start"), _text(x1, y_end + 14, fmt_num(hi), "end"),
            _text((x0 + x1) / 2, y_end + 30, f"{x_label} · dot: estimate · bar: interval · red tick: limit")]
    for i, (r, status) in enumerate(rows):
        y = TOP + 14 + row_h * i + row_h / 2
        color = STATUS_COLOURS.get(status, "#57606a")
        tip = f"<title>{escape(r.label)}: {fmt_num(r.estimate)} [{fmt_num(r.low)}, {fmt_num(r.high)}]" + (
            f", limit {fmt_num(r.limit)}" if r.limit is not None else "") + (f" — {escape(status)}" if status else "") + "</title>"
        body.append(_text(label_w - 8, y + 4, r.label if len(r.label) <= 50 else r.label[:49] + "…", "end"))
        if all(math.isfinite(v) for v in (r.low, r.high, r.estimate)):
            body.append(f'<line x1="{sx(r.low):.1f}" y1="{y:.1f}" x2="{sx(r.high):.1f}" y2="{y:.1f}" stroke="{color}" '
                        f'stroke-width="3"/>')
            body.append(f'<circle cx="{sx(r.estimate):.1f}" cy="{y:.1f}" r="5" fill="{color}">{tip}</circle>')
        if r.limit is not None and math.isfinite(r.limit):
            body.append(f'<line x1="{sx(r.limit):.1f}" y1="{y - 8:.1f}" x2="{sx(r.limit):.1f}" y2="{y + 8:.1f}" class="threshold"/>')
        if status:
            body.append(f'<text x="{x1 + 8}" y="{y + 4:.1f}" text-anchor="start" fill="{color}" font-weight="700">'
                        f"{escape(status)}</text>")
    return _svg(body, label, y_end + 38)
