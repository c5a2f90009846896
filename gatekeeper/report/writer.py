"""Write every final report of a run into its directory, each file atomically.

The raw records (records.jsonl, see records.py) are written during the run by the runner;
`write_reports` writes the five final files once the verdict is known. Each file is rendered
completely in memory before anything touches disk, so a renderer that raises leaves no file
half-written; the other reports are still written, and then the first error is raised.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from gatekeeper.report.atomic import write_atomic
from gatekeeper.report.html import render_correctness_html, render_performance_html
from gatekeeper.report.junit import render_junit
from gatekeeper.report.markdown import render_markdown
from gatekeeper.report.summary_json import render_summary_json
from gatekeeper.results import RunResult

RENDERERS: dict[str, tuple[str, Callable[[RunResult], str]]] = {
    "summary_json": ("summary.json", render_summary_json),
    "junit": ("junit.xml", render_junit),
    "markdown": ("summary.md", render_markdown),
    "correctness_html": ("correctness.html", render_correctness_html),
    "performance_html": ("performance.html", render_performance_html),
}


def write_reports(run: RunResult, out_dir: Path) -> dict[str, Path]:
    """Render and write all reports for `run` into `out_dir` (created if missing).

    Returns the written paths by key: summary_json, junit, markdown, correctness_html,
    performance_html. summary.json goes first: it is what CI reads.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    failures: list[tuple[str, BaseException]] = []
    for key, (name, render) in RENDERERS.items():
        try:
            written[key] = write_atomic(out_dir / name, render(run))
        except Exception as e:  # a renderer bug must not cost the other reports; re-raised below
            failures.append((name, e))
    if failures:
        first = failures[0][1]
        first.add_note("reports not written: " + ", ".join(name for name, _ in failures))
        raise first
    return written
