"""`gatekeeper compare RUN_A RUN_B` on run directories written by the project's own renderers
(summary.json by `SummaryJsonRenderer`, records.jsonl by `RecordWriter`) from the report tests'
hand-built runs: identical runs, a fixed run against a broken one and back, metric deltas and
intervals, runs of different plans, bad input, and hostile text in the HTML and markdown."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gatekeeper import exit_codes
from gatekeeper.compare.diff import RunComparison, compare_runs
from gatekeeper.compare.load import load_run
from gatekeeper.compare.render import markdown
from gatekeeper.report.run.data import build_report_data
from gatekeeper.report.records import RecordWriter
from gatekeeper.report.run.registry import listed_filenames
from gatekeeper.report.run.summary_json import SummaryJsonRenderer
from gatekeeper.results import CheckResult, GateResult, Judgement, RunResult, Status
from gatekeeper.run.run_dir import mark_incomplete
from report_runs import XSS, promote_run, rollback_run
from paths import ROOT

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
FAILED = {"numerics.logprob_delta", "golden.eos-stop", "golden.tool-weather"}  # rollback_run's FAIL and ERROR checks


def write_run(run: RunResult, out: Path) -> Path:
    """A finished run directory for `run`: summary.json and records.jsonl, as `gatekeeper run` writes them."""
    out.mkdir(parents=True)
    (out / "summary.json").write_text(SummaryJsonRenderer().render(build_report_data(run, listed_filenames())),
                                      encoding="utf-8")
    with RecordWriter(out / "records.jsonl") as records:
        for gate in run.gates:
            for check in gate.checks:
                records.write(check)
    return out


def with_checks(run: RunResult, change) -> RunResult:
    """`run` with every check replaced by `change(check)`."""
    gates = tuple(dataclasses.replace(g, checks=tuple(change(c) for c in g.checks)) for g in run.gates)
    return dataclasses.replace(run, gates=gates)


def fixed(run: RunResult) -> RunResult:
    """`run` as if its candidate were fixed: every FAIL and ERROR passes."""
    return with_checks(run, lambda c: dataclasses.replace(c, status=Status.PASS, reason="fine")
                       if c.status in (Status.FAIL, Status.ERROR) else c)


def gk(*args: str) -> subprocess.CompletedProcess:
    """`gatekeeper ARGS...` as a subprocess."""
    proc = subprocess.run([sys.executable, "-m", "gatekeeper.cli", *args], capture_output=True, text=True, cwd=ROOT,
                          env=ENV, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def compared(tmp_path: Path, a: RunResult, b: RunResult) -> RunComparison:
    return compare_runs(load_run(write_run(a, tmp_path / "a"), "A"), load_run(write_run(b, tmp_path / "b"), "B"))


def test_identical_runs_change_nothing_and_exit_0(tmp_path):
    a, b = write_run(rollback_run(), tmp_path / "a"), write_run(rollback_run(), tmp_path / "b")
    c = compare_runs(load_run(a, "A"), load_run(b, "B"))
    assert (c.changed, c.worse, c.only_a, c.only_b, c.new_findings, c.deltas, c.intervals, c.plan_differences) == \
        ((),) * 8
    assert c.num_common == 12
    proc = gk("compare", str(a), str(b))
    assert proc.returncode == exit_codes.OK, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[0].startswith("A: ")  # no plan note
    assert proc.stdout.splitlines()[-1] == "result: no check got worse; 0 of 12 common checks changed status"


def test_promote_against_rollback_lists_the_failed_checks_as_worse_and_exits_1(tmp_path):
    a, b = write_run(promote_run(), tmp_path / "a"), write_run(rollback_run(), tmp_path / "b")
    c = compare_runs(load_run(a, "A"), load_run(b, "B"))
    assert {w.check_id for w in c.worse} == FAILED  # new in B: two blocking FAILs and an ERROR
    assert {x.id for x in c.new_findings} == FAILED
    assert "golden.refusal" in {x.id for x in c.only_b} and not c.only_a
    proc = gk("compare", str(a), str(b))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "got worse (3):" in proc.stdout and "golden.eos-stop: new in B: blocking FAIL" in proc.stdout
    assert "ROLLBACK" in proc.stdout.splitlines()[2]  # B's verdict and headline


def test_status_changes_for_the_worse_and_for_the_better(tmp_path):
    broken, good = rollback_run(), fixed(rollback_run())
    c = compared(tmp_path / "worse", good, broken)
    changes = {s.b.id: (s.a.status, s.b.status, s.worse) for s in c.changed}
    assert set(changes) == FAILED and not c.only_a and not c.only_b
    assert changes["golden.eos-stop"][:2] == (Status.PASS, Status.FAIL)
    assert changes["golden.tool-weather"][2] == "PASS → ERROR: could not run in B"
    assert {w.check_id for w in c.worse} == FAILED and {x.id for x in c.new_findings} == FAILED
    assert next(s for s in c.changed if s.b.id == "golden.eos-stop").a.reason == "fine"  # both reasons kept

    back = compared(tmp_path / "better", broken, good)
    assert {s.b.id for s in back.changed} == FAILED
    assert not back.worse and not back.new_findings


def test_decided_to_undecided_and_a_blocking_skip_are_worse_fail_to_undecided_is_not(tmp_path):
    def b_side(c: CheckResult) -> CheckResult:
        if c.id == "golden.short-ok":  # PASS → undecided
            return dataclasses.replace(c, status=Status.WARN, undecided=True)
        if c.id == "golden.multi-round":  # a blocking PASS no longer run
            return dataclasses.replace(c, status=Status.SKIP)
        if c.id == "golden.eos-stop":  # FAIL → undecided: less bad, not worse
            return dataclasses.replace(c, status=Status.WARN, undecided=True)
        return c

    run = fixed(rollback_run())
    a = with_checks(run, lambda c: dataclasses.replace(c, status=Status.FAIL) if c.id == "golden.eos-stop" else c)
    c = compared(tmp_path, a, with_checks(a, b_side))
    worse = {w.check_id: w.why for w in c.worse}
    assert worse == {"golden.short-ok": "PASS → UNDECIDED: decided in A, undecided in B",
                     "golden.multi-round": "PASS → SKIP: the check alone now makes the run HOLD"}
    assert {s.b.id for s in c.changed} == {"golden.short-ok", "golden.multi-round", "golden.eos-stop"}
    assert {x.id for x in c.new_findings} == {"golden.short-ok"}  # eos-stop was a finding in A already


def perf_check(ratio: float, ci: list[float], noise_ci: list[float], nan: float) -> CheckResult:
    return CheckResult(id="performance.c4.output_tokens_per_s", gate="performance", status=Status.PASS, blocking=True,
                       reason="no regression",
                       metrics={"level": 4, "ratio": ratio, "ci": ci, "noise_ci": noise_ci, "worse_by": 1 - ratio,
                        "slo": {"ttft_p95_s": 0.5}, "first_nan": nan, "blocks": [1.0, 2.0], "note": "text"},
                       judgement=Judgement.STATISTICAL)


def with_perf(run: RunResult, check: CheckResult) -> RunResult:
    gate = GateResult(id="performance", stage=6, title="Performance", description="What it checks.", status=check.status, checks=(check,))
    return dataclasses.replace(run, gates=(*run.gates, gate))


def test_metric_deltas_and_intervals_with_their_overlap(tmp_path):
    run = fixed(rollback_run())
    a = with_perf(run, perf_check(1.02, [0.98, 1.06], [0.99, 1.01], float("nan")))
    b = with_perf(run, perf_check(0.80, [0.75, 0.85], [0.995, 1.02], float("nan")))
    c = compared(tmp_path, a, b)
    deltas = {(d.check_id, d.name): (d.a, d.b) for d in c.deltas}
    assert deltas == {("performance.c4.output_tokens_per_s", "ratio"): (1.02, 0.80),
                      ("performance.c4.output_tokens_per_s", "worse_by"): (pytest.approx(-0.02), pytest.approx(0.2))}
    assert next(d for d in c.deltas if d.name == "ratio").delta == pytest.approx(-0.22)  # NaN on both sides: no delta
    intervals = {i.name: (i.a, i.b, i.overlap) for i in c.intervals}
    assert intervals == {"ci": ((0.98, 1.06), (0.75, 0.85), False), "noise_ci": ((0.99, 1.01), (0.995, 1.02), True)}
    assert not c.changed and not c.worse
    md = markdown(c)
    assert "| `performance.c4.output_tokens_per_s` | `ci` | [0.98, 1.06] | [0.75, 0.85] | disjoint |" in md
    assert "| `performance.c4.output_tokens_per_s` | `ratio` | 1.02 | 0.8 | -0.22 |" in md


def test_runs_of_different_policies_say_so_first(tmp_path):
    run = rollback_run()
    a = write_run(run, tmp_path / "a")
    b = write_run(dataclasses.replace(run, policy="gates/smoke.yaml", seed=7), tmp_path / "b")
    proc = gk("compare", str(a), str(b), "--out", str(tmp_path / "out"))
    assert proc.returncode == exit_codes.OK, proc.stdout + proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first.startswith("note: the runs differ in their plan (policy: A /tmp/checkout/gates/default.yaml, "
                            "B gates/smoke.yaml; seed: A 1234, B 7)")
    md = (tmp_path / "out" / "compare.md").read_text(encoding="utf-8").splitlines()
    assert md[2].startswith("> ⚠️ **Not a like-for-like comparison:** the runs differ in their plan (policy:")
    page = (tmp_path / "out" / "compare.html").read_text(encoding="utf-8")
    assert page.index("Not a like-for-like comparison") < page.index('<div class="big">no check got worse')


def _no_summary(d: Path) -> None:
    d.mkdir()


def _not_json(d: Path) -> None:
    write_run(promote_run(), d)
    (d / "summary.json").write_text("{not json", encoding="utf-8")


def _no_gates(d: Path) -> None:
    write_run(promote_run(), d)
    doc = json.loads((d / "summary.json").read_text(encoding="utf-8"))
    del doc["gates"]
    (d / "summary.json").write_text(json.dumps(doc), encoding="utf-8")


def _later_format(d: Path) -> None:
    write_run(promote_run(), d)
    doc = json.loads((d / "summary.json").read_text(encoding="utf-8"))
    (d / "summary.json").write_text(json.dumps({**doc, "format": "gatekeeper.summary/2"}), encoding="utf-8")


def _incomplete(d: Path) -> None:
    write_run(promote_run(), d)
    mark_incomplete(d, "run-x", "2026-11-29T23:00:00Z")


@pytest.mark.parametrize("make, says", [
    (None, "no such directory"),
    (_no_summary, "not a run directory (no summary.json)"),
    (_not_json, "summary.json: not JSON"),
    (_no_gates, "summary.json: not a gatekeeper summary (at top level: 'gates' is a required property)"),
    (_later_format, "summary.json: format 'gatekeeper.summary/2', not 'gatekeeper.summary/1'"),
    (_incomplete, "an unfinished run (incomplete.json is there"),
], ids=["missing", "no-summary", "not-json", "no-gates", "later-format", "incomplete"])
def test_bad_input_is_exit_3_with_one_line_naming_it(tmp_path, make, says):
    good, bad = write_run(promote_run(), tmp_path / "good"), tmp_path / "bad"
    if make is not None:
        make(bad)
    proc = gk("compare", str(good), str(bad))
    assert proc.returncode == exit_codes.USAGE, proc.stdout + proc.stderr
    assert proc.stdout == ""
    [line] = proc.stderr.splitlines()
    assert line.startswith(f"gatekeeper: error: B {bad}") and says in line, line


def test_hostile_text_is_escaped_in_the_html_and_the_markdown(tmp_path):
    run = fixed(rollback_run())
    hostile = with_checks(run, lambda c: dataclasses.replace(c, status=Status.FAIL, reason=f"answered {XSS} | @team")
                          if c.id == "golden.eos-stop" else c)
    a, b = write_run(run, tmp_path / "a"), write_run(hostile, tmp_path / "b")
    proc = gk("compare", str(a), str(b), "--out", str(tmp_path / "out"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-3:] == [f"  {tmp_path / 'out' / name}" for name in
                                             ("compare.html", "compare.md", "compare.json")]
    page = (tmp_path / "out" / "compare.html").read_text(encoding="utf-8")
    assert "<script" not in page.lower()
    assert "answered &lt;script&gt;alert(1)&lt;/script&gt; | @team" in page
    md = (tmp_path / "out" / "compare.md").read_text(encoding="utf-8")
    assert "<script" not in md and "answered &lt;script&gt;alert(1)&lt;/script&gt; \\| @\u200bteam" in md
    assert not list((tmp_path / "out").glob(".*.tmp"))  # atomic writes leave no temporary file


def test_a_partial_run_is_a_plan_difference(tmp_path):
    run = rollback_run()
    partial = dataclasses.replace(run, gates=tuple(dataclasses.replace(g, excluded="not selected (--gates startup)")
                                                   if g.id != "startup" else g for g in run.gates))
    c = compared(tmp_path, run, partial)
    [left_out] = c.plan_differences
    assert (left_out.name, left_out.a) == ("left out", "nothing")
    assert left_out.b == "gate numerics (not selected (--gates startup)); gate golden (not selected (--gates startup))"
    assert c.b.headline == "ROLLBACK (partial: 1 of 3 gates ran)"


def test_json_lists_every_change_and_keeps_the_exit_code(tmp_path):
    a, b = write_run(promote_run(), tmp_path / "a"), write_run(rollback_run(), tmp_path / "b")
    proc = gk("compare", str(a), str(b), "--json", "--out", str(tmp_path / "out"))
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    assert data["format"] == "gatekeeper.compare/1" and data["worse"] is True
    assert {w["id"] for w in data["got_worse"]} == FAILED == {x["id"] for x in data["new_findings"]}
    assert data["a"]["verdict"] == "PROMOTE" and data["b"]["verdict"] == "ROLLBACK"
    assert json.loads((tmp_path / "out" / "compare.json").read_text()) == data
    assert "compare.json" in proc.stderr  # the files written are listed on stderr, stdout is the JSON alone


def test_compare_md_fits_a_pull_request_comment(tmp_path):
    from gatekeeper.compare.render import MAX_MD_CHARS, MAX_MD_ROWS

    def noisy(c: CheckResult) -> CheckResult:
        return dataclasses.replace(c, metrics={f"m{i}": float(i) for i in range(200)}, reason="r" * 2000)

    many = promote_run()
    a = write_run(with_checks(many, noisy), tmp_path / "a")
    b_run = with_checks(many, lambda c: dataclasses.replace(noisy(c), status=Status.FAIL,
                                                            metrics={f"m{i}": float(i) + 1 for i in range(200)}))
    c = compare_runs(load_run(a, "A"), load_run(write_run(b_run, tmp_path / "b"), "B"))
    assert len(c.deltas) > MAX_MD_ROWS
    text = markdown(c)
    assert len(text) <= MAX_MD_CHARS
    assert "compare.html and compare.json" in text


def test_runs_against_different_references_are_not_like_for_like(tmp_path):
    """V1 judged vLLM 0.32.0 against vLLM 0.31.0, V2 against the bundled engine: the reference is
    part of the plan, named by the engine the identity line names."""
    run = promote_run()
    ref = next(t for t in run.targets if t.role == "reference")
    vllm = dataclasses.replace(ref, kind="launch", description="launch `bash scripts/vllm_cpu.sh 0.31.0 --port {port}`",
                               version="0.31.0", observed=(("engine_version", "0.31.0"),))
    other = dataclasses.replace(run, targets=tuple(vllm if t.role == "reference" else t for t in run.targets))
    c = compared(tmp_path, other, run)
    [reference] = c.plan_differences
    assert reference.name == "reference" and reference.a.startswith("vLLM 0.31.0: launch `bash scripts/vllm_cpu.sh 0.31.0")
    assert reference.b.startswith("bundled engine") and "the runs differ in their plan (reference: A vLLM 0.31.0" in markdown(c)
