"""correctness.html and performance.html: the run's two self-contained pages, as `Renderer`s.

Each page's view is built by its family from the parts of the report data it shows
(correctness/view.py, performance/view.py), under the header both pages share (header.py), and
rendered in the report package's Jinja2 environment (html.py). Each page is told the other's
file name for the link between them.
"""

from __future__ import annotations

from gatekeeper.report.correctness.view import correctness_view
from gatekeeper.report.header import RunView, run_files, run_view
from gatekeeper.report.html import render_page
from gatekeeper.report.performance.view import performance_view
from gatekeeper.report.run.data import ReportData
from gatekeeper.report.run.interface import Renderer


def _header(data: ReportData, page: str, other_page: str = "") -> RunView:
    """The page's header; a reason naming a performance check links into `other_page` ("": this page)."""
    return run_view(data.run, data.counts, run_files(data.run, data.report_files, page), other_page)


class CorrectnessHtmlRenderer(Renderer):
    """correctness.html: the verdict and its reasons, the correctness table
    (docs/bug-classes.md#correctness-table), the key charts, the failures, then every gate with
    its checks and their evidence."""

    name = "correctness_html"
    filename = "correctness.html"

    def render(self, data: ReportData) -> str:
        """correctness.html's text."""
        header = _header(data, self.filename, PerformanceHtmlRenderer.filename)
        return render_page("correctness.html.j2", **correctness_view(header, data.run, tuple(data.gates()), data.correctness),
                           other_page=PerformanceHtmlRenderer.filename)


class PerformanceHtmlRenderer(Renderer):
    """performance.html: the verdict with the performance gate's own reasons, its table, key
    charts and checks, then latency and throughput per target and per gate, with histograms."""

    name = "performance_html"
    filename = "performance.html"

    def render(self, data: ReportData) -> str:
        """performance.html's text."""
        view = performance_view(_header(data, self.filename), data.run, tuple(data.gates()), data.performance)
        return render_page("performance.html.j2", **view, other_page=CorrectnessHtmlRenderer.filename)
