"""junit.xml of a merged matrix: one <testsuite> per cell, one <testcase> per check.

Each suite carries the cell's axis values, verdict and expected verdict as properties. A FAIL is
a <failure>, an ERROR an <error> (both typed "blocking" or "advisory"), a SKIP <skipped>. A cell
whose run left no checks (it died) is one <testcase name="run"> with an <error> saying why, so the
test view is never green for a cell nobody judged. Text goes through `xml_text` and xml.etree,
as in the run's own junit.xml.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from gatekeeper.report.safe_text import xml_text
from gatekeeper.report.matrix.data import MatrixCell, MatrixCheck, MergedMatrix

_TAG = {"FAIL": "failure", "ERROR": "error", "SKIP": "skipped"}


def _count(checks: tuple[MatrixCheck, ...], status: str) -> int:
    return sum(1 for k in checks if k.status == status)


def _testsuite(root: ET.Element, c: MatrixCell) -> None:
    suite = ET.SubElement(root, "testsuite", name=xml_text(c.cell), tests=str(max(1, len(c.checks))),
                          failures=str(_count(c.checks, "FAIL")),
                          errors=str(_count(c.checks, "ERROR") + (0 if c.checks else 1)),
                          skipped=str(_count(c.checks, "SKIP")))
    props = ET.SubElement(suite, "properties")
    for name, value in [*c.axes.items(), ("verdict", c.verdict.value), ("expected", c.expected.value if c.expected else "")]:
        ET.SubElement(props, "property", name=xml_text(name), value=xml_text(value))
    if not c.checks:
        case = ET.SubElement(suite, "testcase", classname="gatekeeper.matrix", name="run")
        ET.SubElement(case, "error", message=xml_text(c.note or "no checks"))
    for k in c.checks:
        case = ET.SubElement(suite, "testcase", classname=xml_text(f"gatekeeper.{k.id.split('.')[0]}"),
                             name=xml_text(k.id), time=f"{k.duration_s:.3f}")
        tag = _TAG.get(k.status)
        if tag == "skipped":
            ET.SubElement(case, tag, message=xml_text(k.reason))
        elif tag:
            ET.SubElement(case, tag, message=xml_text(k.reason), type="blocking" if k.blocking else "advisory")


def matrix_junit(m: MergedMatrix) -> str:
    """junit.xml's text: XML declaration, indented, trailing newline."""
    root = ET.Element("testsuites", name="gatekeeper matrix")
    for c in m.cells:
        _testsuite(root, c)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
