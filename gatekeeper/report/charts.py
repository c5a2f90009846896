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

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b")
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


def _axes(x_label: str, y_label: str, x_lo: float, x_hi: float, y_hi: float) -> list[str]:
    x0, x1, y0, y1 = LEFT, W - RIGHT, H - BOTTOM, TOP
    return [
        f'<line x1="{x0}" y1="{y0}" x2="{x1}" y2="{y0}" class="axis"/>',
        f'<line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y1}" class="axis"/>',
        _text(x0, y0 + 16, fmt_num(x_lo)),
        _text(x1, y0 + 16, fmt_num(x_hi), "end"),
        _text((x0 + x1) / 2, H - 6, x_label),
        _text(x0 - 6, y1 + 10, fmt_num(y_hi), "end"),
        _text(x0 - 6, y0, "0", "end"),
        f'<text x="14" y="{(y0 + y1) / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {(y0 + y1) / 2:.1f})">{escape(y_label)}</text>',
    ]


def _ok(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _finite(values: Sequence[object]) -> list[float]:
    return [float(v) for v in values if _ok(v)]  # type: ignore[arg-type]


def histogram_svg(values: Sequence[float], label: str, threshold: float | None = None, bins: int = 30) -> Markup:
    """A histogram of `values` with an optional dashed threshold line."""
    finite = _finite(values)
    dropped = len(values) - len(finite)
    if not finite:
        return Markup(f'<p class="muted">{escape(label)}: no finite values ({dropped} non-finite).</p>')
    lo, hi = min(finite), max(finite)
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
    body = _axes(label, "count", lo, hi, top)
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
    """One polyline per named series over shared x values, with a legend."""
    xs = _finite(x)
    ys = [v for vals in series.values() for v in _finite(vals)]
    if len(xs) < 1 or not ys:
        return Markup(f'<p class="muted">{escape(y_label)}: no data.</p>')
    x_lo, x_hi = min(xs), max(xs)
    y_lo, y_hi = min(0.0, min(ys)), max(ys)
    x_hi = x_hi if x_hi > x_lo else x_lo + 1
    y_hi = y_hi if y_hi > y_lo else y_lo + 1
    plot_w, plot_h = W - LEFT - RIGHT, H - TOP - BOTTOM

    def px(xv: float, yv: float) -> str:
        sx = LEFT + plot_w * (xv - x_lo) / (x_hi - x_lo)
        sy = H - BOTTOM - plot_h * (yv - y_lo) / (y_hi - y_lo)
        return f"{sx:.1f},{sy:.1f}"

    body = _axes(x_label, y_label, x_lo, x_hi, y_hi)
    for i, (name, vals) in enumerate(series.items()):
        color = PALETTE[i % len(PALETTE)]
        pts = [(float(a), float(b)) for a, b in zip(x, vals, strict=False) if _ok(a) and _ok(b)]
        if not pts:
            continue
        coords = " ".join(px(a, b) for a, b in pts)
        body.append(f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="2"/>')
        for a, b in pts:
            cx, cy = px(a, b).split(",")
            tip = f"<title>{escape(name)}: {escape(fmt_num(b))}</title>"
            body.append(f'<circle cx="{cx}" cy="{cy}" r="3" fill="{color}">{tip}</circle>')
        lx, ly = LEFT + 10 + 180 * (i % 3), TOP + 14 * (i // 3)
        body.append(f'<rect x="{lx}" y="{ly}" width="10" height="10" fill="{color}"/>')
        body.append(_text(lx + 14, ly + 9, str(name)[:24], "start"))
    return _svg(body, f"{y_label} by {x_label}")


def heatmap_svg(rows: Sequence[str], columns: Sequence[str], values: Sequence[Sequence[object]],
                labels: Sequence[Sequence[str]] | None, label: str) -> Markup:
    """A grid of cells coloured by value in [0, 1] (red 0 → green 1; grey when not a number),
    each with its text label: e.g. a needle grid of prompt length × depth."""
    if not rows or not columns:
        return Markup(f'<p class="muted">{escape(label)}: no data.</p>')
    row_h, label_w = 26, 110
    cell_w = (W - label_w - RIGHT) / len(columns)
    height = TOP + 18 + row_h * len(rows) + 8
    body = [_text(label_w + cell_w * (j + 0.5), TOP + 10, str(c)[:16]) for j, c in enumerate(columns)]
    for i, name in enumerate(rows):
        y = TOP + 18 + i * row_h
        body.append(_text(label_w - 8, y + 17, str(name)[:16], "end"))
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
