"""junit.xml: one <testsuite> per gate, one <testcase> per check, for CI test-report views.

The mapping (docs/ci-outputs.md) makes a test view red exactly when the run is not PROMOTE: a
check is red when it would by itself make the run ROLLBACK or HOLD (`verdict.check_verdict`).

- blocking FAIL → <failure type="rollback">;
- ERROR → <error type="hold">; advisory FAIL, blocking SKIP and a blocking check left undecided →
  <failure type="hold"> (the message starts with what it was: "FAIL (advisory)", "not judged",
  "undecided");
- advisory SKIP (a gate not run, a feature neither side has) → <skipped>;
- PASS passes; a WARN or an advisory undecided check passes with its status and reason in
  <system-out>; a check with a detection limit (what a PASS would have caught, `detection.py`)
  carries it as the testcase property `detection_limit`;
- one more suite, `gatekeeper.verdict`, holds one testcase named `verdict` whatever the verdict
  (a name that changed with it would start a new test history in Jenkins or GitLab on every
  change); its properties carry the verdict, the headline, the exit code and who was compared
  (`identity`, report/identity.py), and it fails for
  HOLD and ROLLBACK with the headline and reasons, so the view is red even for a HOLD no single
  check explains (nothing ran).

Each testcase's `time` is the check's own duration (the work it timed, else the time since its
gate's previous check; checks decided from one shared batch of requests each carry the batch's
time, docs/ci-outputs.md) and `timestamp` when it was recorded; each suite's `timestamp` is when its gate started. Model
output can contain anything, so text goes through xml.etree (which escapes markup) after
characters XML 1.0 cannot carry at all (NUL, most C0 controls, lone surrogates) are replaced
(`xml_text`, safe_text.py).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from gatekeeper.report.identity import identify
from gatekeeper.report.jsonable import dumps
from gatekeeper.report.run.data import ReportData
from gatekeeper.report.run.interface import Renderer
from gatekeeper.report.safe_text import xml_text
from gatekeeper.report.statuses import StatusCounts, coverage_text
from gatekeeper.results import CheckResult, GateResult, RunResult, Status, Verdict
from gatekeeper.verdict import check_verdict

VERDICT_SUITE = "gatekeeper.verdict"
VERDICT_TESTCASE = "verdict"  # stable across runs and verdicts: CI test history follows it by name


def _seconds(value: float) -> str:
    return f"{value:.3f}"


def _details(check: CheckResult) -> str:
    lines = [check.reason]
    if check.metrics:
        lines.append("metrics: " + dumps(check.metrics))
    return xml_text("\n".join(lines))


def _label(check: CheckResult) -> str:
    """What the check was, in words that lead its message: "FAIL (advisory)", "undecided", ..."""
    if check.status == Status.SKIP and check.blocking:
        return "not judged"
    return ("undecided" if check.undecided else check.status.value) + ("" if check.blocking else " (advisory)")


def _outcome(check: CheckResult) -> str:
    """How the check shows in a test view: "failure", "error", "skipped" or "passed"."""
    if check.status == Status.ERROR:
        return "error"
    if check_verdict(check) != Verdict.PROMOTE:
        return "failure"
    return "skipped" if check.status == Status.SKIP else "passed"


def _testcase(suite: ET.Element, check: CheckResult) -> str:
    attrs = {"classname": xml_text(f"gatekeeper.{check.gate}"), "name": xml_text(check.id), "time": _seconds(check.duration_s)}
    case = ET.SubElement(suite, "testcase", attrs | ({"timestamp": check.finished_at} if check.finished_at else {}))
    if check.detection_limit is not None:  # what a PASS would have caught (before the outcome, as JUnit orders it)
        props = ET.SubElement(case, "properties")
        ET.SubElement(props, "property", name="detection_limit", value=xml_text(check.detection_limit.text()))
    outcome, label = _outcome(check), _label(check)
    message = xml_text(f"{label}: {check.reason}")
    kind = check_verdict(check).value.lower()
    if outcome in ("failure", "error"):
        ET.SubElement(case, outcome, message=message, type=kind).text = _details(check)
    elif outcome == "skipped":
        ET.SubElement(case, "skipped", message=message)
    elif check.status == Status.WARN:
        ET.SubElement(case, "system-out").text = message
    return outcome


def _testsuite(root: ET.Element, gate: GateResult, counts: StatusCounts, timestamp: str) -> ET.Element:
    checks = gate.checks
    suite = ET.SubElement(root, "testsuite", name=xml_text(f"gatekeeper.{gate.id}"), tests=str(len(checks)),
                          time=_seconds(gate.duration_s), timestamp=xml_text(gate.started_at or timestamp))
    props = ET.SubElement(suite, "properties")
    for name, value in (("stage", gate.stage), ("title", gate.title), ("status", gate.status.value),
                        ("coverage", coverage_text(gate.coverage))):
        ET.SubElement(props, "property", name=name, value=xml_text(value))
    outcomes = [_testcase(suite, check) for check in checks]
    for key, outcome in (("failures", "failure"), ("errors", "error"), ("skipped", "skipped")):
        suite.set(key, str(outcomes.count(outcome)))
    if gate.notes:
        ET.SubElement(suite, "system-out").text = xml_text("\n".join(gate.notes))
    return suite


def _verdict_suite(root: ET.Element, run: RunResult) -> ET.Element:
    """`gatekeeper.verdict`: one testcase named `verdict`, failing unless the run PROMOTEs."""
    failed = run.verdict != Verdict.PROMOTE
    suite = ET.SubElement(root, "testsuite", name=VERDICT_SUITE, tests="1", failures=str(int(failed)), errors="0",
                          skipped="0", time=_seconds(sum(g.duration_s for g in run.gates)),
                          timestamp=xml_text(run.started_at))
    case = ET.SubElement(suite, "testcase", classname=VERDICT_SUITE, name=VERDICT_TESTCASE,
                         time=_seconds(sum(g.duration_s for g in run.gates)))
    props = ET.SubElement(case, "properties")
    who = identify(run.targets)
    for name, value in (("verdict", run.verdict.value), ("headline", run.headline), ("exit_code", run.exit_code),
                        *((("identity", who.line),) if who is not None else ())):
        ET.SubElement(props, "property", name=name, value=xml_text(value))
    if failed:
        ET.SubElement(case, "failure", message=xml_text(f"{run.headline}: {run.reasons[0] if run.reasons else ''}"),
                      type=run.verdict.value.lower()).text = xml_text("\n".join(run.reasons))
    else:  # the headline first: the name no longer says the verdict
        ET.SubElement(case, "system-out").text = xml_text("\n".join((run.headline, *run.reasons)))
    return suite


class JunitRenderer(Renderer):
    """junit.xml: UTF-8 declaration, indented, trailing newline."""

    name = "junit"
    filename = "junit.xml"

    def render(self, data: ReportData) -> str:
        """junit.xml's text."""
        run = data.run
        root = ET.Element("testsuites", name=xml_text(f"gatekeeper {run.run_id}: {run.headline}"),
                          time=_seconds(sum(g.duration_s for g in run.gates)))
        suites = [_testsuite(root, gate, gate_counts, run.started_at) for gate, gate_counts in data.gates()]
        suites.append(_verdict_suite(root, run))
        for key in ("tests", "failures", "errors", "skipped"):
            root.set(key, str(sum(int(s.get(key, "0")) for s in suites)))
        ET.indent(root)
        body = ET.tostring(root, encoding="unicode")
        return '<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n"
