"""The merged matrix's report files, written into the merge's directory by the report package's writer.

merged.json, summary.md, junit.xml and merged.html, and each cell's execution-path record as
`records/<cell>.yaml` (the cell's id with anything but word characters, `.`, `=` and `-` made
`_`). Every file is rendered in memory before the first one is written (writer.py), so a renderer
that raises leaves no report half-made.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from gatekeeper.report.matrix.data import MergedMatrix
from gatekeeper.report.matrix.junit import matrix_junit
from gatekeeper.report.matrix.markdown import matrix_markdown
from gatekeeper.report.matrix.view import matrix_html
from gatekeeper.report.writer import write_pages


def record_filename(cell: str) -> str:
    """The file name of a cell's record under records/."""
    return (re.sub(r"[^\w.=-]+", "_", cell)[:120] or "cell") + ".yaml"


def write_merged(m: MergedMatrix, out: Path) -> list[Path]:
    """Write every report file of `m` into `out` (made if missing); returns their paths."""
    return write_pages(out, [*((f"records/{record_filename(c.cell)}", c.record_yaml) for c in m.cells),
                             ("merged.json", json.dumps(m.to_json(), indent=2, ensure_ascii=False) + "\n"),
                             ("summary.md", matrix_markdown(m)),
                             ("junit.xml", matrix_junit(m)),
                             ("merged.html", matrix_html(m))])
