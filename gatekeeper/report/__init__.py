"""Reports: a `RunResult` rendered as summary.json, junit.xml, summary.md and two HTML pages,
plus the raw per-check records written while the run goes.

Public API: `write_reports(run, out_dir)`, `RecordWriter(path).write(check)`,
`summarize_performance(run)`, and the single-format renderers.
"""

from gatekeeper.report.html import render_correctness_html, render_performance_html
from gatekeeper.report.junit import render_junit
from gatekeeper.report.markdown import render_markdown
from gatekeeper.report.performance import PerformanceSummary, summarize_performance
from gatekeeper.report.records import RecordWriter, read_records
from gatekeeper.report.summary_json import SUMMARY_FORMAT, build_summary, render_summary_json
from gatekeeper.report.writer import write_reports

__all__ = [
    "SUMMARY_FORMAT",
    "PerformanceSummary",
    "RecordWriter",
    "build_summary",
    "read_records",
    "render_correctness_html",
    "render_junit",
    "render_markdown",
    "render_performance_html",
    "render_summary_json",
    "summarize_performance",
    "write_reports",
]
