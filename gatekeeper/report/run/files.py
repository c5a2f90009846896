"""Write every final report of a run into its directory, through the report package's writer.

The raw records (records.jsonl, see report/records.py) are written during the run by the runner;
`write_reports` writes the final files, one per renderer in registry.py, once the verdict is
known. The report data is built once and every file is rendered completely in memory before
anything touches disk (writer.py then writes each atomically), so a renderer that raises leaves no
file half-written; the other reports are still written, and then the first error is raised.
"""

from __future__ import annotations

from pathlib import Path

from gatekeeper.redact import NONE, Redactor
from gatekeeper.report.run.data import build_report_data
from gatekeeper.report.run.registry import RENDERERS, listed_filenames
from gatekeeper.report.writer import write_pages
from gatekeeper.report_links import RELATIVE, ReportLinks
from gatekeeper.results import RunResult


def write_reports(run: RunResult, out_dir: Path, redactor: Redactor = NONE, links: ReportLinks = RELATIVE) -> dict[str, Path]:
    """Render and write all reports for `run` into `out_dir` (created if missing), their links
    out of the run directory following `links`.

    Returns the written paths by renderer name: summary_json, junit, markdown,
    correctness_html, performance_html. summary.json goes first: it is what CI reads. Every
    file's text passes through `redactor` before it is written; the reports read away from the
    run directory (summary.md) link under `links` (--report-url).
    """
    data = build_report_data(run, listed_filenames(), links)
    names: list[str] = []
    pages: list[tuple[str, str]] = []
    failures: list[tuple[str, BaseException]] = []
    for renderer in RENDERERS:
        try:
            pages.append((renderer.filename, redactor.text(renderer.render(data))))
            names.append(renderer.name)
        except Exception as e:  # a renderer bug must not cost the other reports; re-raised below
            failures.append((renderer.filename, e))
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    written = dict(zip(names, write_pages(Path(out_dir), pages), strict=True))
    if failures:
        first = failures[0][1]
        first.add_note("reports not written: " + ", ".join(name for name, _ in failures))
        raise first
    return written
