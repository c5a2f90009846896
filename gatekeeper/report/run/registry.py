"""The report formats a run writes: the one list of renderers, and so of report file names.

`RENDERERS` is in the order the files are written: summary.json first, because it is what CI
reads. Everything else that names the report files reads this tuple: `write_reports`, the
"reports: …" progress line and the footer of summary.md (through `ReportData.report_files`).
"""

from __future__ import annotations

from gatekeeper.report.run.interface import Renderer
from gatekeeper.report.run.junit import JunitRenderer
from gatekeeper.report.run.markdown import MarkdownRenderer
from gatekeeper.report.run.pages import CorrectnessHtmlRenderer, PerformanceHtmlRenderer
from gatekeeper.report.run.summary_json import SummaryJsonRenderer

RENDERERS: tuple[Renderer, ...] = (
    SummaryJsonRenderer(),
    JunitRenderer(),
    MarkdownRenderer(),
    CorrectnessHtmlRenderer(),
    PerformanceHtmlRenderer(),
)


def listed_filenames() -> tuple[str, ...]:
    """The report file names in the order they are listed to a person: the HTML pages first
    (they are what one opens), then the others in the order they are written."""
    return tuple(r.filename for r in sorted(RENDERERS, key=lambda r: not r.filename.endswith(".html")))
