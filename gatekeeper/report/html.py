"""Every HTML page's one Jinja2 environment: the templates in report/templates/, rendered by `render_page`.

Autoescape is on for every template (model output may contain `<script>`); the templates'
names end in `.j2`, so it is switched on explicitly rather than by file extension. Undefined
names raise, so a template typo fails the tests instead of rendering blank. Each page family
builds its view (plain values, ready SVG charts) and renders its template here: the run's
correctness.html and performance.html (run/pages.py), the merged matrix (matrix/view.py), the
selftest (selftest/view.py), compare (compare/render.py) and bisect (bisect/report.py).
"""

from __future__ import annotations

from jinja2 import Environment, PackageLoader, StrictUndefined


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
    """The text of the page `template` (a file in report/templates/) rendered with `values`."""
    return _ENV.get_template(template).render(**values)
