"""Reports: a `RunResult` rendered as summary.json, junit.xml, summary.md and two HTML pages,
plus the raw per-check records written while the run goes; and the other commands' pages.

One folder per page family, the pieces more than one family uses here beside them:

- run/ — one run's reports: the run becomes `ReportData` once (run/data.py); each format is a
  `Renderer` of that data (run/interface.py), listed in run/registry.py (the only list of report
  files) and written by `write_reports` (run/files.py);
- correctness/ and performance/ — each HTML page's own pieces (the correctness table, what
  changed; the performance summary, the gate's table and reasons) and its view, built from the
  parts of `ReportData` the page shows, so they never import run/;
- matrix/ — `gatekeeper report merge`'s merged matrix (data.py → markdown.py, junit.py, view.py,
  written by files.py); selftest/ — `gatekeeper selftest`'s detection matrix (data.py → view.py);
- shared: html.py (the one Jinja2 environment, `render_page`: compare and bisect render their
  pages through it too), the header and gate sections both HTML pages show (header.py,
  gate_view.py, key_charts.py, evidence_view.py, charts.py, textdiff.py), statuses.py and
  identity.py (how a status and who was compared read everywhere), safe_text.py (markdown and
  XML text), records.py / serialise.py / jsonable.py (the JSON forms), and writer.py
  (`write_pages`: the one writer every page of every family goes through, atomically).

Public API: `write_reports(run, out_dir)`, `RecordWriter(path).write(check)`, `report_data(run)`,
and one function per format that renders a single run (for tests and tools; the run itself
writes all of them through `write_reports`).
"""

from __future__ import annotations

from gatekeeper.json_types import JsonObject
from gatekeeper.report.performance.summary import PerformanceSummary, summarize_performance
from gatekeeper.report.records import RecordWriter, read_records
from gatekeeper.report.run.data import ReportData, build_report_data
from gatekeeper.report.run.files import write_reports
from gatekeeper.report.run.interface import Renderer
from gatekeeper.report.run.junit import JunitRenderer
from gatekeeper.report.run.markdown import MarkdownRenderer
from gatekeeper.report.run.pages import CorrectnessHtmlRenderer, PerformanceHtmlRenderer
from gatekeeper.report.run.registry import RENDERERS, listed_filenames
from gatekeeper.report.run.summary_json import SUMMARY_FORMAT, SummaryJsonRenderer, summary_of
from gatekeeper.report_links import RELATIVE, ReportLinks
from gatekeeper.results import RunResult


def report_data(run: RunResult, links: ReportLinks = RELATIVE) -> ReportData:
    """The report data of one run, with the registry's report files (summary.md's links per `links`)."""
    return build_report_data(run, listed_filenames(), links)


def render_summary_json(run: RunResult) -> str:
    """summary.json's text for `run`."""
    return SummaryJsonRenderer().render(report_data(run))


def build_summary(run: RunResult) -> JsonObject:
    """The summary of `run` as plain data (not yet sanitised for strict JSON)."""
    return summary_of(report_data(run))


def render_junit(run: RunResult) -> str:
    """junit.xml's text for `run`."""
    return JunitRenderer().render(report_data(run))


def render_markdown(run: RunResult, links: ReportLinks = RELATIVE) -> str:
    """summary.md's text for `run`, its links relative or under `links.base` (--report-url)."""
    return MarkdownRenderer().render(report_data(run, links))


def render_correctness_html(run: RunResult) -> str:
    """correctness.html's text for `run`."""
    return CorrectnessHtmlRenderer().render(report_data(run))


def render_performance_html(run: RunResult) -> str:
    """performance.html's text for `run`."""
    return PerformanceHtmlRenderer().render(report_data(run))


__all__ = [
    "RENDERERS",
    "SUMMARY_FORMAT",
    "PerformanceSummary",
    "RecordWriter",
    "Renderer",
    "ReportData",
    "build_report_data",
    "build_summary",
    "read_records",
    "render_correctness_html",
    "render_junit",
    "render_markdown",
    "render_performance_html",
    "render_summary_json",
    "report_data",
    "summarize_performance",
    "write_reports",
]
