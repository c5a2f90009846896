"""Reports: a `RunResult` rendered as summary.json, junit.xml, summary.md and two HTML pages,
plus the raw per-check records written while the run goes.

The run becomes `ReportData` once (data.py); each format is a `Renderer` of that data
(interface.py), and registry.py lists them (the only list of report files). Public API:
`write_reports(run, out_dir)`, `RecordWriter(path).write(check)`, `report_data(run)`, and one
function per format that renders a single run (for tests and tools; the run itself writes all
of them through `write_reports`).

The other commands' reports are rendered here too, from their own report data, with the same
Jinja2 environment (html.py) and the same atomic writer (atomic.py): `gatekeeper report merge`'s
merged matrix (matrix_data.py → matrix_markdown.py, matrix_junit.py, matrix_view.py, written by
matrix_writer.py) and `gatekeeper selftest`'s detection matrix (selftest_data.py →
selftest_view.py); compare and bisect render their pages through `render_page`.
"""

from __future__ import annotations

from typing import Any

from gatekeeper.report.data import ReportData, build_report_data
from gatekeeper.report.html import CorrectnessHtmlRenderer, PerformanceHtmlRenderer
from gatekeeper.report.interface import Renderer
from gatekeeper.report.junit import JunitRenderer
from gatekeeper.report.markdown import MarkdownRenderer
from gatekeeper.report.performance import PerformanceSummary, summarize_performance
from gatekeeper.report.records import RecordWriter, read_records
from gatekeeper.report.registry import RENDERERS, listed_filenames
from gatekeeper.report.summary_json import SUMMARY_FORMAT, SummaryJsonRenderer, summary_of
from gatekeeper.report.writer import write_reports
from gatekeeper.report_links import RELATIVE, ReportLinks
from gatekeeper.results import RunResult


def report_data(run: RunResult, links: ReportLinks = RELATIVE) -> ReportData:
    """The report data of one run, with the registry's report files (summary.md's links per `links`)."""
    return build_report_data(run, listed_filenames(), links)


def render_summary_json(run: RunResult) -> str:
    """summary.json's text for `run`."""
    return SummaryJsonRenderer().render(report_data(run))


def build_summary(run: RunResult) -> dict[str, Any]:
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
