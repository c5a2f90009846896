"""A `RunComparison` shown three ways: plain lines for the console, compare.md and compare.html.

All three come from one view (`compare_view`): the comparison's values as display strings,
in the order a release engineer reads them — the plan differences first (runs of different
plans are not a like-for-like comparison), the two runs side by side, the changes for the
worse, every status change with both reasons, the new findings, the checks only one run has,
then the metric deltas and intervals. Nothing is judged here; diff.py decides.

Reasons and ids can hold model output: compare.md escapes every cell with `md_cell` /
`md_code` (the summary.md rules), compare.html is rendered by the report package's Jinja2
environment (autoescaped), and console lines have control characters replaced. compare.html,
compare.md and compare.json are rendered in memory, then written by the report package's writer,
each atomically.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from gatekeeper.compare.diff import RunComparison, plan_of, status_label
from gatekeeper.compare.json_form import to_text
from gatekeeper.report.html import render_page
from gatekeeper.report.safe_text import md_cell, md_code
from gatekeeper.report.writer import write_pages
from gatekeeper.results import CheckResult

MAX_CONSOLE_ROWS = 20  # per list on the console; compare.html and compare.json list everything
MAX_MD_ROWS = 60  # per table in compare.md (a PR comment): the rest are counted and left to the other files
MAX_MD_CHARS = 60_000  # below GitHub's 65,536-character limit on a comment
MAX_CONSOLE_CHARS = 300
_CONTROL = re.compile("[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class CheckRow:
    """A check as the lists show it."""

    id: str
    status: str  # PASS … ERROR, or UNDECIDED
    badge: str  # the status's badge class (an undecided check's recorded status, WARN)
    blocking: str  # "blocking" or "advisory"
    reason: str


@dataclass(frozen=True)
class ChangeRow:
    """A status change."""

    a: CheckRow
    b: CheckRow
    blocking: str  # "blocking", "advisory", or "blocking → advisory" where the policies differ
    worse: str  # why it is worse; "" when it is not


def _check_row(c: CheckResult) -> CheckRow:
    return CheckRow(c.id, status_label(c), c.status.value, "blocking" if c.blocking else "advisory", c.reason)


def _change_row(a: CheckResult, b: CheckResult, worse: str | None) -> ChangeRow:
    ra, rb = _check_row(a), _check_row(b)
    return ChangeRow(ra, rb, rb.blocking if ra.blocking == rb.blocking else f"{ra.blocking} → {rb.blocking}", worse or "")


def _num(x: float) -> str:
    """A number as summary.json spells it where it is not finite."""
    if math.isnan(x):
        return "NaN"
    return f"{x:.6g}" if math.isfinite(x) else ("Infinity" if x > 0 else "-Infinity")


def _interval(i: tuple[float, float]) -> str:
    return f"[{_num(i[0])}, {_num(i[1])}]"


def headline(c: RunComparison) -> str:
    """One line: whether B got worse than A."""
    n = len(c.worse)
    changed = f"{len(c.changed)} of {c.num_common} common checks changed status"
    return (f"{n} check{'s' if n != 1 else ''} got worse; {changed}" if n else f"no check got worse; {changed}")


def plan_note(c: RunComparison) -> str:
    """What the runs' plans differ in, as one sentence ("" when they are the same)."""
    if not c.plan_differences:
        return ""
    parts = "; ".join(f"{d.name}: A {d.a}, B {d.b}" for d in c.plan_differences)
    return f"the runs differ in their plan ({parts}): a changed check may come from the plan, not the engines"


@dataclass(frozen=True, kw_only=True)
class CompareView:
    """The comparison as display strings, in reading order; one view for every output."""

    headline: str
    is_worse: bool
    plan_note: str  # "" when both runs ran the same plan
    runs: tuple[tuple[str, str, str, bool], ...]  # (what, A, B, whether they differ)
    num_common: int
    worse: tuple[tuple[str, str], ...]  # (check id, why)
    changed: tuple[ChangeRow, ...]
    new_findings: tuple[CheckRow, ...]
    only_a: tuple[CheckRow, ...]
    only_b: tuple[CheckRow, ...]
    deltas: tuple[tuple[str, str, str, str, str], ...]  # (check id, metric, A, B, B − A)
    intervals: tuple[tuple[str, str, str, str, str], ...]  # (check id, metric, A, B, "overlap" | "disjoint")


def compare_view(c: RunComparison) -> CompareView:
    """The comparison as display values."""
    a, b = c.a, c.b
    runs = [("run", a.run_id, b.run_id), ("directory", str(a.path), str(b.path)), ("verdict", a.headline, b.headline),
            ("first reason", a.reasons[0] if a.reasons else "–", b.reasons[0] if b.reasons else "–"),
            ("candidate", a.candidate, b.candidate),
            *((name, x, y) for (name, x), (_, y) in zip(plan_of(a), plan_of(b)))]
    return CompareView(
        headline=headline(c), is_worse=bool(c.worse), plan_note=plan_note(c),
        runs=tuple((name, x, y, x != y) for name, x, y in runs), num_common=c.num_common,
        worse=tuple((w.check_id, w.why) for w in c.worse),
        changed=tuple(_change_row(s.a, s.b, s.worse) for s in c.changed),
        new_findings=tuple(_check_row(x) for x in c.new_findings), only_a=tuple(_check_row(x) for x in c.only_a),
        only_b=tuple(_check_row(x) for x in c.only_b),
        deltas=tuple((d.check_id, d.name, _num(d.a), _num(d.b), "–" if math.isnan(d.delta) else f"{d.delta:+.4g}")
                     for d in c.deltas),
        intervals=tuple((i.check_id, i.name, _interval(i.a), _interval(i.b), "overlap" if i.overlap else "disjoint")
                        for i in c.intervals))


def _line(text: str) -> str:
    """Text for one console line: inner whitespace collapsed, control characters shown as '?', cut."""
    indent = len(text) - len(text.lstrip(" "))
    s = " " * indent + _CONTROL.sub("?", " ".join(text.split()))
    return s if len(s) <= MAX_CONSOLE_CHARS else s[: MAX_CONSOLE_CHARS - 1] + "…"


def console_lines(c: RunComparison) -> list[str]:
    """The console summary: the plan note first, then each list, at most MAX_CONSOLE_ROWS rows each."""
    v = compare_view(c)
    lines = [_line(f"note: {v.plan_note}")] if v.plan_note else []
    lines += [_line(f"{role}: {run.run_id} {run.headline}: {run.reasons[0] if run.reasons else '–'} ({run.path})")
              for role, run in (("A", c.a), ("B", c.b))]
    lines.append(f"checks: {c.num_common} in both, {len(c.changed)} changed status, {len(c.worse)} got worse, "
                 f"{len(c.only_a)} only in A, {len(c.only_b)} only in B, {len(c.new_findings)} new findings in B")

    def section(title: str, rows: list[list[str]]) -> None:
        """A titled list; each row is one or more lines."""
        if rows:
            lines.append(f"{title} ({len(rows)}):")
            lines.extend("  " + _line(text) for row in rows[:MAX_CONSOLE_ROWS] for text in row)
            if len(rows) > MAX_CONSOLE_ROWS:
                lines.append(f"  … and {len(rows) - MAX_CONSOLE_ROWS} more (--out DIR writes them all)")

    section("got worse", [[f"{i}: {why}"] for i, why in v.worse])
    section("changed status", [[f"{r.b.id}: {r.a.status} → {r.b.status} ({r.blocking}){' WORSE' if r.worse else ''}",
                                f"  A: {r.a.reason}", f"  B: {r.b.reason}"] for r in v.changed])
    section("new findings in B", [[f"{r.id}: {r.status} ({r.blocking}): {r.reason}"] for r in v.new_findings])
    section("only in A", [[f"{r.id}: {r.status} ({r.blocking})"] for r in v.only_a])
    section("only in B", [[f"{r.id}: {r.status} ({r.blocking})"] for r in v.only_b])
    section("metric deltas", [[f"{i} {name}: {x} → {y} ({d})"] for i, name, x, y, d in v.deltas])
    section("intervals", [[f"{i} {name}: A {x}, B {y}: {o}"] for i, name, x, y, o in v.intervals])
    lines.append(f"result: {v.headline}")
    return lines


def _md_table(columns: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    if not rows:
        return ["None.", ""]
    more = [f"…and {len(rows) - MAX_MD_ROWS} more: compare.html and compare.json list every one.", ""] \
        if len(rows) > MAX_MD_ROWS else []
    return ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns),
            *("| " + " | ".join(r) + " |" for r in rows[:MAX_MD_ROWS]), "", *more]


def _capped(lines: list[str]) -> str:
    """The Markdown, cut at a line boundary below MAX_MD_CHARS with a note saying where the rest is."""
    text = "\n".join(lines).rstrip("\n") + "\n"
    if len(text) <= MAX_MD_CHARS:
        return text
    note = "\n…cut here to fit a pull-request comment: compare.html and compare.json have everything.\n"
    return text[:text.rfind("\n", 0, MAX_MD_CHARS - len(note)) + 1] + note


def _md_checks(rows: tuple[CheckRow, ...]) -> list[str]:
    return _md_table(("check", "status", "blocking", "reason"),
                     [(f"`{md_code(r.id)}`", r.status, r.blocking, md_cell(r.reason)) for r in rows])


def markdown(c: RunComparison) -> str:
    """compare.md: the headline, the plan note, the runs side by side, then every list."""
    v = compare_view(c)
    lines = [f"## gatekeeper compare: {md_cell(v.headline)}", ""]
    if v.plan_note:
        lines += [f"> ⚠️ **Not a like-for-like comparison:** {md_cell(v.plan_note)}", ""]
    lines += _md_table(("", "A", "B"), [(name + (" (differs)" if differs else ""), md_cell(x), md_cell(y))
                                        for name, x, y, differs in v.runs])
    lines += [f"### Got worse ({len(v.worse)})", "",
              *_md_table(("check", "why"), [(f"`{md_code(i)}`", md_cell(why)) for i, why in v.worse])]
    lines += [f"### Changed status ({len(v.changed)} of {v.num_common} checks in both)", "",
              *_md_table(("check", "A → B", "blocking", "worse", "reason in A", "reason in B"),
                         [(f"`{md_code(r.b.id)}`", f"{r.a.status} → {r.b.status}", r.blocking, md_cell(r.worse) or "no",
                           md_cell(r.a.reason), md_cell(r.b.reason)) for r in v.changed])]
    for title, rows in (("New findings in B", v.new_findings), ("Only in A", v.only_a), ("Only in B", v.only_b)):
        lines += [f"### {title} ({len(rows)})", "", *_md_checks(rows)]
    lines += [f"### Metric deltas ({len(v.deltas)})", "",
              *_md_table(("check", "metric", "A", "B", "B − A"),
                         [(f"`{md_code(i)}`", f"`{md_code(n)}`", x, y, d) for i, n, x, y, d in v.deltas])]
    lines += [f"### Intervals ({len(v.intervals)})", "",
              *_md_table(("check", "metric", "A", "B", "overlap"),
                         [(f"`{md_code(i)}`", f"`{md_code(n)}`", x, y, o) for i, n, x, y, o in v.intervals])]
    return _capped(lines)


def html(c: RunComparison) -> str:
    """compare.html, from report/templates/compare.html.j2."""
    return render_page("compare.html.j2", view=compare_view(c))


def write(c: RunComparison, out: Path) -> list[Path]:
    """compare.html, compare.md and compare.json in `out`, each written atomically."""
    return write_pages(out, [("compare.html", html(c)), ("compare.md", markdown(c)), ("compare.json", to_text(c))])
