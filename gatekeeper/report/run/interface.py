"""The report-format extension point: a `Renderer` turns the report data into one file's text.

A renderer is a pure function of `ReportData`: it reads the run and the figures derived from it
and returns the whole file as a string. It never touches the disk (files.py writes the files
through the report package's one writer, each atomically), never calls an endpoint, and never
derives what `ReportData` already holds.

To add a report format:

1. Write `gatekeeper/report/run/<format>.py` with a subclass of `Renderer` that sets `name` (the key
   `write_reports` returns the file's path under, e.g. "summary_json") and `filename` (e.g.
   "summary.json"), and implements `render`. If the format needs a figure that another report
   also shows, compute it in `build_report_data` (data.py) and read it from `ReportData`; a
   page's view that only its family uses goes in that family's folder (e.g. correctness/view.py),
   taking the parts of `ReportData` it shows, so the families never import this folder.
2. Add an instance to `RENDERERS` in registry.py. That tuple is the only list of report files:
   the writer, the progress line and the reports that point to each other all read it.
3. Add a gold file or a test that opens the output with a real parser.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from gatekeeper.report.run.data import ReportData


class Renderer(ABC):
    """One report format: the file it writes and how its text is made from the report data."""

    name: ClassVar[str]
    """Identifier of the report, e.g. "summary_json"; the key of its path in `write_reports`."""
    filename: ClassVar[str]
    """The file the report is written to inside the run's directory, e.g. "summary.json"."""

    @abstractmethod
    def render(self, data: ReportData) -> str:
        """The complete text of the file (text, not bytes; the writer encodes it as UTF-8)."""
