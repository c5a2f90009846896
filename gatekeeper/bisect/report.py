"""The bisect's report: `bisect.json` (format gatekeeper.bisect/1), `bisect.md` (for a CI
summary) and `bisect.html` (rendered with the report package's Jinja2 environment: autoescaped),
rendered in memory, then written by the report package's writer, each atomically. Every step's
evidence is there: the build, its outcome and why, each bisected check's status and figures, the
seeds, the wall time and the run directories."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from gatekeeper.json_types import JsonObject
from gatekeeper.bisect.driver import BisectResult
from gatekeeper.report.html import render_page
from gatekeeper.report.writer import write_pages

FORMAT = "gatekeeper.bisect/1"
_COMMIT = re.compile(r"^[0-9a-f]{7,40}$")


def headline(r: BisectResult) -> str:
    """One line: what the bisect found."""
    a, b = r.answer, r.builds
    if r.bad_skipped:
        return f"undecided: the bad build {b[r.bad]} could not be judged, so nothing was bisected"
    if a.first_bad is None:
        return f"no bad build: {b[r.bad]} passes {', '.join(r.checks)} too"
    if a.exact:
        return f"first bad build: {b[a.first_bad]} (last good: {b[a.last_good]})"
    return (f"undecided: the first bad build is one of {', '.join(b[i] for i in a.suspects)} "
            f"(last good {b[a.last_good]}; the builds between were skipped)")


def range_to_read(r: BisectResult) -> str | None:
    """Where the change is: the commits or releases between the last good and the first bad build."""
    a = r.answer
    if a.first_bad is None:
        return None
    good, bad = r.builds[a.last_good], r.builds[a.first_bad]
    if _COMMIT.fullmatch(good) and _COMMIT.fullmatch(bad):
        return f"git log {good}..{bad}"
    if "==" in good and "==" in bad and good.split("==")[0] == bad.split("==")[0]:
        name, v0, v1 = good.split("==")[0], good.split("==")[1], bad.split("==")[1]
        return f"{name}: the changes from {v0} to {v1} (its release notes; in its repository `git log v{v0}..v{v1}`)"
    return f"what changed from {good} to {bad}"


def to_json(r: BisectResult) -> JsonObject:
    """bisect.json's content."""
    a = r.answer
    return {"format": FORMAT, "headline": headline(r), "decided": r.decided,
            "first_bad": r.builds[a.first_bad] if a.first_bad is not None else None,
            "last_good": r.builds[a.last_good], "suspects": [r.builds[i] for i in a.suspects],
            "range_to_read": range_to_read(r), "checks": list(r.checks), "template": r.template,
            "builds": list(r.builds[r.good:r.bad + 1]), "budget": r.budget, "judged": len(r.steps),
            "steps": [s.to_json() for s in r.steps]}


def _figures(check: dict[str, Any]) -> str:
    """A check's few figures that say how far it moved (worse_by, rates, counts), for a table cell."""
    metrics = check.get("metrics") or {}
    keep = {k: v for k, v in metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    shown = list(keep.items())[:4]
    return ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in shown)


def markdown(r: BisectResult) -> str:
    """bisect.md: the headline, the range to read, then every step."""
    lines = [f"## gatekeeper bisect: {headline(r)}", ""]
    where = range_to_read(r)
    if where:
        lines += [f"Range to read: {where}", ""]
    lines += [f"Checks: {', '.join(f'`{c}`' for c in r.checks)}; builds {r.builds[r.good]} … {r.builds[r.bad]} "
              f"({r.bad - r.good + 1}); {len(r.steps)} judged (budget {r.budget} without skips).", "",
              "| step | build | outcome | checks | why | launch s | seconds |", "|---|---|---|---|---|---|---|"]
    for n, s in enumerate(r.steps, 1):
        checks = "; ".join(f"{cid} {c.get('status')}" for cid, c in s.checks.items())
        why = s.why.replace("|", "\\|").replace("\n", " ")[:200]
        launch = f"{s.launch_s:.1f}" if s.launch_s is not None else "–"
        lines.append(f"| {n} | `{s.build}` | {s.outcome.value} | {checks} | {why} | {launch} | {s.seconds:.0f} |")
    return "\n".join(lines) + "\n"


def write(r: BisectResult, out: Path) -> list[Path]:
    """bisect.json, bisect.md and bisect.html in `out`."""
    data = to_json(r)
    steps = [{**s.to_json(), "figures": {cid: _figures(c) for cid, c in s.checks.items()}} for s in r.steps]
    html = render_page("bisect.html.j2", data=data, steps=steps, exact=r.answer.exact, decided=r.decided)
    return write_pages(out, [("bisect.json", json.dumps(data, indent=2) + "\n"), ("bisect.md", markdown(r)),
                             ("bisect.html", html)])
