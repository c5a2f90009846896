"""correctness.html and performance.html: self-contained pages rendered with Jinja2.

Autoescape is on for every template (model output may contain `<script>`); the templates'
names end in `.j2`, so it is switched on explicitly rather than by file extension. Undefined
names raise, so a template typo fails the tests instead of rendering blank. The view-models
come from viewmodel.py (correctness) and performance_view.py, both built from the report data;
the two pages are two `Renderer`s sharing one Jinja2 environment, each told the other's file
name for the link between them.
"""

from __future__ import annotations

from jinja2 import Environment, PackageLoader, StrictUndefined

from gatekeeper.report.data import ReportData
from gatekeeper.report.interface import Renderer
from gatekeeper.report.performance_view import performance_view
from gatekeeper.report.viewmodel import correctness_view


def _environment() -> Environment:
    return Environment(
        loader=PackageLoader("gatekeeper.report", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


_ENV = _environment()


def render_page(template: str, **values: object) -> str:
    """Any other page from report/templates (compare, bisect, the merged matrix, the selftest), in
    the same environment."""
    return _ENV.get_template(template).render(**values)


class CorrectnessHtmlRenderer(Renderer):
    """correctness.html: the verdict and its reasons, the correctness table
    (docs/bug-classes.md#correctness-table), the key charts, the failures, then every gate with
    its checks and their evidence."""

    name = "correctness_html"
    filename = "correctness.html"

    def render(self, data: ReportData) -> str:
        """correctness.html's text."""
        return _ENV.get_template("correctness.html.j2").render(**correctness_view(data, PerformanceHtmlRenderer.filename, self.filename),
                                                               other_page=PerformanceHtmlRenderer.filename)


class PerformanceHtmlRenderer(Renderer):
    """performance.html: the verdict with the performance gate's own reasons, its table, key
    charts and checks, then latency and throughput per target and per gate, with histograms."""

    name = "performance_html"
    filename = "performance.html"

    def render(self, data: ReportData) -> str:
        """performance.html's text."""
        return _ENV.get_template("performance.html.j2").render(**performance_view(data, self.filename),
                                                               other_page=CorrectnessHtmlRenderer.filename)
