"""summary.json, junit.xml and summary.md against scrubbed gold files in tests/report/gold/.

Regenerate after an intended change with `GATEKEEPER_UPDATE_GOLD=1 pytest tests/report/test_report_gold.py`
and review the diff like code.
"""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Callable

import pytest

from gatekeeper import __version__
from gatekeeper.report import render_junit
from gatekeeper.report.run.junit import VERDICT_TESTCASE
from gatekeeper.report import render_markdown
from gatekeeper.report import SUMMARY_FORMAT, render_summary_json
from gatekeeper.results import RunResult, Status, Verdict
from paths import ROOT
from report_runs import hold_run, promote_run, rollback_run

GOLD = Path(__file__).parent / "gold"
RUNS: dict[str, Callable[[], RunResult]] = {"rollback": rollback_run, "promote": promote_run, "hold": hold_run}
FORMATS: dict[str, tuple[str, Callable[[RunResult], str]]] = {
    "summary.json": ("json", render_summary_json),
    "junit.xml": ("xml", render_junit),
    "summary.md": ("md", render_markdown),
}


def scrub(text: str) -> str:
    """Remove what legitimately differs between runs: times, durations, absolute paths."""
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)?", "<TIME>", text)
    text = re.sub(r'(time|timestamp)="[^"]*"', r'\1="<T>"', text)
    text = re.sub(r'"duration_s": [0-9.e-]+', '"duration_s": "<T>"', text)
    text = re.sub(r"(?<![\w/])/(tmp|home|work|var|Users)/[^\s\"'`<|)]*", "<PATH>", text)
    return text


@pytest.mark.parametrize("run_name", sorted(RUNS))
@pytest.mark.parametrize("file_name", sorted(FORMATS))
def test_matches_gold(run_name: str, file_name: str) -> None:
    ext, render = FORMATS[file_name]
    got = scrub(render(RUNS[run_name]()))
    gold = GOLD / f"{run_name}.{file_name}"
    if os.environ.get("GATEKEEPER_UPDATE_GOLD"):
        gold.parent.mkdir(exist_ok=True)
        gold.write_text(got, encoding="utf-8")
    assert gold.exists(), f"missing gold file {gold}; run with GATEKEEPER_UPDATE_GOLD=1"
    assert got == gold.read_text(encoding="utf-8")


def test_scrub_removes_times_and_paths() -> None:
    s = scrub('started 2026-11-29T23:00:00+00:00 policy /tmp/x/gates/default.yaml time="1.250"')
    assert s == 'started <TIME> policy <PATH> time="<T>"'


def test_summary_json_is_strict_and_versioned() -> None:
    text = render_summary_json(rollback_run())
    data = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))
    assert data["format"] == SUMMARY_FORMAT == "gatekeeper.summary/1"
    schema = json.loads((ROOT / "gatekeeper" / "schemas" / "summary.schema.json").read_text())
    assert data["$schema"] == schema["$id"] and data["gatekeeper_version"] == __version__
    assert (data["verdict"], data["exit_code"]) == ("ROLLBACK", 1)
    numerics = next(g for g in data["gates"] if g["id"] == "numerics")
    check = next(c for c in numerics["checks"] if c["id"] == "numerics.logprob_delta")
    assert check["metrics"]["first_nan"] == "NaN"
    assert {"id", "status", "blocking", "metrics", "reason"} <= set(check)
    assert {"targets", "reasons", "policy", "golden_sets", "seed", "run_id", "performance"} <= set(data)


@pytest.mark.parametrize("run_name,code", [("promote", 0), ("rollback", 1), ("hold", 2)])
def test_exit_codes_in_summary(run_name: str, code: int) -> None:
    assert json.loads(render_summary_json(RUNS[run_name]()))["exit_code"] == code


def test_junit_structure() -> None:
    root = ET.fromstring(render_junit(rollback_run()).encode("utf-8"))
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["gatekeeper.startup", "gatekeeper.numerics", "gatekeeper.golden",
                                               "gatekeeper.verdict"]
    golden = suites[2]
    assert golden.get("tests") == "7" and golden.get("failures") == "1" and golden.get("errors") == "1"
    cases = {c.get("name"): c for c in golden.findall("testcase")}
    assert cases["golden.eos-stop"].find("failure") is not None
    assert cases["golden.tool-weather"].find("error") is not None
    assert cases["golden.refusal"].find("skipped") is not None
    warn = cases["golden.long-word"]
    assert warn.find("failure") is None and (warn.findtext("system-out") or "").startswith("WARN (advisory): ")
    assert (warn.findtext("system-out") or "").count("WARN") == 1
    assert cases["golden.short-ok"].find("*") is None
    verdict = suites[3].find("testcase")
    assert verdict is not None and verdict.find("failure") is not None and verdict.find("failure").get("type") == "rollback"


@pytest.mark.parametrize("run_name", sorted(RUNS))
def test_the_verdict_testcase_keeps_its_name_whatever_the_verdict(run_name: str) -> None:
    """CI test history (Jenkins, GitLab) follows a testcase by name: the verdict's is `verdict` for
    every verdict and headline, the verdict is in its properties and message, and it is red exactly
    when the run is not PROMOTE."""
    from dataclasses import replace

    from gatekeeper.report.identity import identify

    run = RUNS[run_name]()
    partial = replace(run, restricted=("at most 3 golden cases (--limit)",))  # a headline "(partial: ...)"
    for one in (run, partial):
        root = ET.fromstring(render_junit(one).encode("utf-8"))
        suite = next(s for s in root.findall("testsuite") if s.get("name") == "gatekeeper.verdict")
        (case,) = suite.findall("testcase")
        assert case.get("name") == VERDICT_TESTCASE and case.get("classname") == "gatekeeper.verdict"
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        assert props == {"verdict": one.verdict.value, "headline": one.headline, "exit_code": str(one.exit_code),
                         "identity": identify(one.targets).line}, props
        failure = case.find("failure")
        assert (failure is not None) == (one.verdict != Verdict.PROMOTE)
        said = failure.get("message") if failure is not None else case.findtext("system-out")
        assert (said or "").startswith(one.headline), said
    assert "partial" in partial.headline


def _red(run: RunResult) -> set[str]:
    """The testcases a CI test view shows red (a <failure> or an <error>)."""
    root = ET.fromstring(render_junit(run).encode("utf-8"))
    return {c.get("name") or "" for c in root.iter("testcase") if c.find("failure") is not None or c.find("error") is not None}


@pytest.mark.parametrize("status,blocking,undecided,red", [
    (Status.PASS, True, False, False), (Status.WARN, True, False, False), (Status.WARN, False, True, False),
    (Status.SKIP, False, False, False), (Status.FAIL, True, False, True), (Status.FAIL, False, False, True),
    (Status.ERROR, False, False, True), (Status.SKIP, True, False, True), (Status.WARN, True, True, True),
])
def test_junit_is_red_exactly_when_the_run_is_not_promote(status: Status, blocking: bool, undecided: bool, red: bool) -> None:
    """One check decides the run; the test view is red (that check and the verdict testcase) iff
    the verdict is HOLD or ROLLBACK, green for a PROMOTE — WARN, advisory SKIP and advisory undecided
    checks pass with their status in <system-out>."""
    from dataclasses import replace

    from gatekeeper.verdict import decide

    run = promote_run()
    gate = run.gates[0]
    check = replace(gate.checks[0], status=status, blocking=blocking, undecided=undecided, reason="the reason")
    gates = (replace(gate, checks=(check,), status=status),)
    verdict, reasons = decide(list(gates))
    run = replace(run, gates=gates, verdict=verdict, reasons=tuple(reasons))
    assert (verdict != Verdict.PROMOTE) == red
    assert _red(run) == ({check.id, VERDICT_TESTCASE} if red else set())


def test_junit_survives_control_characters_and_markup() -> None:
    from dataclasses import replace

    run = rollback_run()
    gate = run.gates[0]
    bad = replace(gate.checks[0], reason='NUL\x00 ESC\x1b <tag attr="x"> & ]]>')
    run = replace(run, gates=(replace(gate, checks=(bad,)),))
    root = ET.fromstring(render_junit(run).encode("utf-8"))
    case = root.find("testsuite/testcase")
    assert case is not None


def test_markdown_neutralises_markup() -> None:
    from gatekeeper.report.safe_text import md_cell

    assert md_cell("a | b <img src=x> `c`\nd") == "a \\| b &lt;img src=x&gt; \\`c\\` d"
    assert md_cell("[x](http://e) *b* @octocat #12 \x1b") == "\\[x\\](http://e) \\*b\\* @\u200boctocat #\u200b12 \u241b"
    md = render_markdown(rollback_run())
    assert "<script>" not in md
