"""junit.xml: one <testsuite> per gate, one <testcase> per check, for CI test-report views.

FAIL becomes <failure>, ERROR <error>, SKIP <skipped>; PASS and WARN pass, WARN with its reason
in <system-out>. The failure's `type` says whether the policy made the check blocking. Model
output can contain anything, so text goes through xml.etree (which escapes markup) after
characters XML 1.0 cannot carry at all (NUL, most C0 controls, lone surrogates) are replaced.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from gatekeeper.report.data import ReportData, StatusCounts, coverage_text
from gatekeeper.report.interface import Renderer
from gatekeeper.report.jsonable import dumps
from gatekeeper.results import CheckResult, GateResult, Status

_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(value: object) -> str:
    """`value` as a string XML 1.0 can hold: illegal characters become U+FFFD."""
    return _XML_ILLEGAL.sub("\ufffd", str(value))


def _seconds(value: float) -> str:
    return f"{value:.3f}"


def _details(check: CheckResult) -> str:
    lines = [check.reason]
    if check.metrics:
        lines.append("metrics: " + dumps(check.metrics))
    return xml_text("\n".join(lines))


def _testcase(suite: ET.Element, check: CheckResult) -> None:
    case = ET.SubElement(
        suite,
        "testcase",
        classname=xml_text(f"gatekeeper.{check.gate}"),
        name=xml_text(check.id),
        time=_seconds(check.duration_s),
    )
    kind = "blocking" if check.blocking else "advisory"
    message = xml_text(check.reason)
    if check.status == Status.FAIL:
        ET.SubElement(case, "failure", message=message, type=kind).text = _details(check)
    elif check.status == Status.ERROR:
        ET.SubElement(case, "error", message=message, type=kind).text = _details(check)
    elif check.status == Status.SKIP:
        ET.SubElement(case, "skipped", message=message)
    elif check.status == Status.WARN:
        ET.SubElement(case, "system-out").text = xml_text(f"WARN: {check.reason}")


def _testsuite(root: ET.Element, gate: GateResult, counts: StatusCounts, timestamp: str) -> ET.Element:
    checks = gate.checks
    suite = ET.SubElement(
        root,
        "testsuite",
        name=xml_text(f"gatekeeper.{gate.id}"),
        tests=str(len(checks)),
        failures=str(counts[Status.FAIL]),
        errors=str(counts[Status.ERROR]),
        skipped=str(counts[Status.SKIP]),
        time=_seconds(gate.duration_s),
        timestamp=xml_text(timestamp),
    )
    props = ET.SubElement(suite, "properties")
    for name, value in (("stage", gate.stage), ("title", gate.title), ("status", gate.status.value),
                        ("coverage", coverage_text(gate.coverage))):
        ET.SubElement(props, "property", name=name, value=xml_text(value))
    for check in checks:
        _testcase(suite, check)
    if gate.notes:
        ET.SubElement(suite, "system-out").text = xml_text("\n".join(gate.notes))
    return suite


class JunitRenderer(Renderer):
    """junit.xml: UTF-8 declaration, indented, trailing newline."""

    name = "junit"
    filename = "junit.xml"

    def render(self, data: ReportData) -> str:
        """junit.xml's text."""
        run, counts = data.run, data.counts
        root = ET.Element(
            "testsuites",
            name=xml_text(f"gatekeeper {run.run_id}: {run.headline}"),
            tests=str(sum(len(g.checks) for g in run.gates)),
            failures=str(counts[Status.FAIL]),
            errors=str(counts[Status.ERROR]),
            skipped=str(counts[Status.SKIP]),
            time=_seconds(sum(g.duration_s for g in run.gates)),
        )
        for gate, gate_counts in data.gates():
            _testsuite(root, gate, gate_counts, run.started_at)
        ET.indent(root)
        body = ET.tostring(root, encoding="unicode")
        return '<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n"
