"""A run that leaves gates out, or chooses fewer golden cases by flag (--cases, --limit), is
PARTIAL in every output, whatever its verdict: the first reasons (after the check that decided a
HOLD or ROLLBACK) name what was left out,
summary.json says `partial`, and each left-out gate appears as skipped in summary.json, summary.md
and junit.xml; a PROMOTE's reason says what it rests on."""

from __future__ import annotations

import re

import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from gatekeeper.results import CheckResult, GateResult, Status, Verdict
from gatekeeper.verdict import decide
from run_util import gk_run
from paths import ROOT


def _gate(gate_id: str, *checks: CheckResult, excluded: str | None = None) -> GateResult:
    return GateResult(id=gate_id, stage=1, title=gate_id.title(), description="", status=Status.PASS, checks=checks, excluded=excluded)


def _check(gate_id: str, status: Status, blocking: bool = True, undecided: bool = False) -> CheckResult:
    return CheckResult(id=f"{gate_id}.x_{status.value.lower()}", gate=gate_id, status=status, blocking=blocking, reason="why",
                       undecided=undecided)


def test_a_full_promote_says_what_it_rests_on():
    verdict, reasons = decide([_gate("a", _check("a", Status.PASS), _check("a", Status.WARN),
                                     _check("a", Status.WARN, blocking=False, undecided=True))])
    assert verdict is Verdict.PROMOTE
    assert reasons == ["all 2 blocking checks passed; 1 WARN, 1 undecided (advisory) (3 checks)"]


def test_a_partial_run_names_the_gates_not_run_right_after_what_decided_it():
    left_out = _gate("shadow", CheckResult(id="shadow.not_selected", gate="shadow", status=Status.SKIP, blocking=False, reason="not run"),
                     excluded="not selected (--gates a)")
    verdict, reasons = decide([_gate("a", _check("a", Status.PASS)), left_out])
    assert verdict is Verdict.PROMOTE
    assert reasons[0] == "PARTIAL: 1 of 2 gates not run (shadow: not selected (--gates a)); this verdict covers a only"
    verdict, reasons = decide([_gate("a", _check("a", Status.FAIL)), left_out])
    assert verdict is Verdict.ROLLBACK and reasons[0].startswith("a.x_fail: FAIL") and reasons[1].startswith("PARTIAL: ")
    verdict, reasons = decide([left_out])
    assert verdict is Verdict.HOLD and reasons[1] == "no checks ran"


def _planned_cases(*args: str) -> list[str]:
    """The golden cases a smoke-policy run would ask, as its dry run lists them."""
    done = subprocess.run([sys.executable, "-m", "gatekeeper.cli", "run", "--dry-run", "--policy", "gates/smoke.yaml", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    line = next(x for x in done.stdout.splitlines() if x.startswith("golden: "))
    return line.split(": ", 2)[2].split(", ")


def test_case_flags_are_checked_at_plan_time():
    """--cases naming no case, and --cases/--limit on a run without gate 3: one line, exit 3."""
    for args, said in ((("--cases", "no-such-*"), "--cases: 'no-such-*' matches no golden case"),
                       (("--gates", "startup", "--limit", "2"), "--limit: choose golden cases, and this run does not run gate 3"),
                       (("--limit", "0"), "--limit")):
        done = subprocess.run([sys.executable, "-m", "gatekeeper.cli", "run", "--dry-run", *args], capture_output=True,
                              text=True, cwd=ROOT, timeout=120)
        assert done.returncode == 3 and said in done.stderr and "Traceback" not in done.stderr, (args, done.stderr)


@pytest.mark.slow  # ~15 s: out of the default suite's 15 minutes (CI runs it)
def test_a_gates_restricted_run_is_partial_in_every_report(tmp_path):
    """--gates leaves gates out and --limit golden cases: both are named in every report's headline."""
    out = gk_run(tmp_path, "--policy", "gates/smoke.yaml", "--gates", "startup,golden", "--limit", "3")
    s = out.summary
    assert s is not None, out.stderr
    assert s["verdict"] == "PROMOTE" and s["partial"] is True
    limited = "at most 3 golden cases (--limit)"
    assert s["restricted"] == [limited] and s["reasons"][1] == f"PARTIAL: {limited}; this verdict covers those only"
    chosen, every = _planned_cases("--limit", "3"), _planned_cases()
    assert len(chosen) == 3 and chosen == every[:3], (chosen, every)
    ids = {c["id"] for c in out.gate("golden")["checks"]}
    assert {f"golden.{case}" for case in chosen} <= ids and not {f"golden.{case}" for case in every[3:]} & ids, ids
    headline = f"PROMOTE (partial: 2 of 6 gates ran; {limited})"
    not_run = ["numerics", "longctx", "shadow", "performance"]
    assert [g["id"] for g in s["gates_not_run"]] == not_run
    assert all(g["why"] == "not selected (--gates startup,golden)" for g in s["gates_not_run"])
    assert s["reasons"][0].startswith("PARTIAL: 4 of 6 gates not run (numerics, longctx, shadow, performance: not "
                                      "selected (--gates startup,golden))")
    assert s["reasons"][0].endswith("this verdict covers startup, golden only")
    assert [g["id"] for g in s["gates"]] == ["startup", "numerics", "golden", "longctx", "shadow", "performance"]
    assert {g["id"]: g["status"] for g in s["gates"] if g["id"] in not_run} == dict.fromkeys(not_run, "SKIP")
    assert out.check("shadow.not_selected")["status"] == "SKIP"
    md = (out.run_dir / "summary.md").read_text()
    assert md.startswith(f"## gatekeeper: ✅ {headline} (exit code 0)")
    assert "PARTIAL: 4 of 6 gates not run" in md
    for page in ("correctness.html", "performance.html"):
        assert f"Verdict: {headline}" in re.sub(r"<[^>]+>", "", (out.run_dir / page).read_text())  # the qualifier in a span
    skipped = {case.get("name") for case in ET.parse(out.run_dir / "junit.xml").iter("testcase")
               if case.find("skipped") is not None}
    assert {f"{g}.not_selected" for g in not_run} <= skipped, skipped
    assert f"verdict: {headline}" in out.stderr and "PARTIAL: 4 of 6" in out.stderr
    table = out.stderr[out.stderr.index("gate                   status"):out.stderr.index("verdict: PROMOTE")].splitlines()
    assert [r.split()[1] for r in table[2:]] == ["startup", "numerics", "golden", "longctx", "shadow", "performance"]
    assert table[2].split()[2] == out.gate("startup")["status"], table
    assert "not run: not selected (--gates startup,golden)" in table[3], table
