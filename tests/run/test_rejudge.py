"""`gatekeeper rejudge RUN_DIR`: the gates again on the answers a real run recorded, no server asked.

Under the run's own policy it gives the same verdict and every check the same status and reason
(a clean run with a carried-over performance gate, a ROLLBACK at golden, a HOLD for an unusable
reference; the default run's rejudge is in test_run_gk_tiny.py, beside its run); under another
policy it decides what that policy says; a request the run did not make, and a measured gate whose
question changed, HOLD it — never a guess, never a PROMOTE.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from fault_proxy import fault_proxy
from rejudge_util import checks, gk_rejudge, comparable_reasons
from run_util import RunOutcome, gk_run
from server_util import running_server
from paths import ROOT

SMOKE = ("--policy", str(ROOT / "gates/smoke.yaml"))


@pytest.fixture(scope="module")
def clean(shared_run) -> RunOutcome:
    """A clean run of the shipped model under the smoke policy, every gate (the performance gate
    included): the session's shared run, which the real-browser and resume tests read too."""
    out = shared_run(*SMOKE)
    assert out.code == 0, out.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def rollback(tmp_path_factory) -> RunOutcome:
    """A candidate whose streamed tool calls break: ROLLBACK at golden."""
    out = gk_run(tmp_path_factory.mktemp("rollback"), *SMOKE, "--gates", "startup,numerics,golden",
                 "--candidate-fault", "tool-parser-partial")
    assert out.code == 1, out.stderr[-3000:]
    return out


def _same(original: RunOutcome, again: RunOutcome) -> None:
    assert again.summary is not None, again.stderr[-3000:]
    assert again.code == original.code and again.summary["verdict"] == original.summary["verdict"]
    assert comparable_reasons(again) == comparable_reasons(original)
    before, after = checks(original.summary), checks(again.summary)
    assert set(after) == set(before)
    changed = {k: (before[k], after[k]) for k in before if before[k] != after[k]}
    assert not changed, changed
    assert again.summary["rejudged"]["from"] == original.run_dir.name


@pytest.mark.slow  # a 25 s run with the performance gate: the ROLLBACK rejudges below stay in the default suite
@pytest.mark.serial  # the clean run's performance gate must decide: alone on the machine
def test_a_clean_run_rejudged_under_its_policy_is_the_same_and_asks_no_server(clean):
    again = gk_rejudge(clean.run_dir)
    _same(clean, again)
    assert again.summary["rejudged"]["carried_over"] == ["performance"]
    assert "no server was asked" in again.stderr
    # what the rejudge saw came from the recording, with the latencies the run measured
    original, replayed = ([json.loads(line) for line in (run.run_dir / "answers" / "reference.jsonl").read_text().splitlines()]
                          for run in (clean, again))
    # every answer replayed, and every rejudged gate's retry count; the carried-over performance gate is not asked again
    answered, retries = (lambda run: [a for a in run if a["method"] != "measured"]), \
        (lambda run: sorted(a["gate"] for a in run if a["method"] == "measured"))
    assert len(answered(replayed)) == len(answered(original)) > 20
    assert retries(replayed) == [g for g in retries(original) if g != "performance"] and "performance" in retries(original)
    assert all(a["cached"] for a in replayed)
    assert again.check("startup.canary.reference")["metrics"]["first_request_s"] == \
        clean.check("startup.canary.reference")["metrics"]["first_request_s"]


def test_a_rollback_rejudged_is_the_same_rollback(rollback):
    again = gk_rejudge(rollback.run_dir)
    _same(rollback, again)
    assert again.check("golden.tool-weather.stream")["status"] == "FAIL"


@pytest.mark.slow  # a server and a proxy; the ROLLBACK rejudge stays
def test_a_hold_for_an_unusable_reference_rejudged_is_the_same_hold(tmp_path, tiny_model_dir):
    with running_server(tiny_model_dir, "--profile", "optimized") as upstream, \
            fault_proxy(upstream.url, "http500") as url:
        out = gk_run(tmp_path / "out", "--model", str(tiny_model_dir), "--reference", url, "--candidate", upstream.url,
                     "--gates", "startup,numerics")
    assert out.code == 2 and any("reference unusable" in r for r in out.summary["reasons"]), out.summary["reasons"]
    _same(out, gk_rejudge(out.run_dir))  # the servers are gone: nothing but the recording answers


def test_another_policy_decides_on_the_same_answers(rollback, tmp_path):
    policy = tmp_path / "golden-advisory.yaml"
    text = (ROOT / "gates/smoke.yaml").read_text()
    policy.write_text(text.replace("checks:\n", "checks:\n  - {match: \"golden.*\", blocking: false}\n", 1))
    again = gk_rejudge(rollback.run_dir, "--policy", str(policy), out=tmp_path / "out")
    assert again.code == 2 and again.summary["verdict"] == "HOLD", again.summary["reasons"]
    fail = again.check("golden.tool-weather.stream")
    assert fail["status"] == "FAIL" and not fail["blocking"]


@pytest.mark.slow  # shares the clean run
@pytest.mark.serial
def test_a_measured_gate_whose_question_changed_holds_instead_of_carrying_over(clean, tmp_path):
    policy = tmp_path / "more-pairs.yaml"
    policy.write_text((ROOT / "gates/smoke.yaml").read_text().replace("    pairs: 4\n", "    pairs: 6\n", 1))
    again = gk_rejudge(clean.run_dir, "--policy", str(policy), out=tmp_path / "out")
    assert again.code == 2 and again.summary["verdict"] == "HOLD", again.summary["reasons"]
    skipped = again.check("performance.not_rejudged")
    assert skipped["status"] == "SKIP" and skipped["blocking"] and "settings" in skipped["reason"]
    assert again.summary["rejudged"]["carried_over"] == []
    before, after = checks(clean.summary), checks(again.summary)
    assert {k: v for k, v in after.items() if not k.startswith("performance.")} == \
        {k: v for k, v in before.items() if not k.startswith("performance.")}


def test_a_request_the_run_did_not_make_is_an_error_never_a_guess(rollback, tmp_path):
    copy = tmp_path / "runs" / rollback.run_dir.name
    shutil.copytree(rollback.run_dir, copy)
    answers = copy / "answers" / "candidate.jsonl"
    kept = [line for line in answers.read_text().splitlines() if json.loads(line)["gate"] != "golden"]
    answers.write_text("\n".join(kept) + "\n")
    again = gk_rejudge(copy, out=tmp_path / "out")
    assert again.code == 2 and again.summary["verdict"] == "HOLD", again.summary["reasons"]
    golden = {k: v for k, v in checks(again.summary).items() if k.startswith("golden.") and k != "golden.coverage"}
    unrecorded = [k for k, (status, _, reason) in golden.items() if status == "ERROR" and "recorded run has no answer" in reason]
    assert len(unrecorded) > 10, golden
    assert not [k for k, (status, _, _) in golden.items() if status in ("PASS", "FAIL")], golden


@pytest.mark.parametrize("case", ["missing", "incomplete", "no-answers", "no-options"])
def test_what_cannot_be_rejudged_is_one_line_and_exit_3(rollback, tmp_path, case):
    run = tmp_path / "runs" / "20260101T000000Z-abcdef"
    if case != "missing":
        shutil.copytree(rollback.run_dir, run)
    if case == "incomplete":
        (run / "incomplete.json").write_text("{}")
    elif case == "no-answers":
        shutil.rmtree(run / "answers")
    elif case == "no-options":
        plan = json.loads((run / "plan.json").read_text())
        (run / "plan.json").write_text(json.dumps({k: v for k, v in plan.items() if k not in ("options", "sources")}))
    out = gk_rejudge(run, out=tmp_path / "out")
    assert out.code == 3 and out.summary is None, out.stderr
    said = [line for line in out.stderr.splitlines() if line.strip()]
    assert said and str(run) in said[0], out.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


@pytest.mark.slow  # two more runs: test_compare.py's synthetic runs stay in the default suite
def test_compare_two_runs_of_one_build_shows_no_change_and_a_faulted_run_its_faulted_checks(rollback, shared_run,
                                                                                            tmp_path):
    """`gatekeeper compare` on real runs: two launches of the same build, then the clean against
    the faulted. The first run is the session's shared one (the browser test reads it too)."""
    args = (*SMOKE, "--gates", "startup,numerics,golden")
    first, second = shared_run(*args), gk_run(tmp_path / "two", *args)
    same = subprocess.run([sys.executable, "-m", "gatekeeper.cli", "compare", str(first.run_dir), str(second.run_dir),
                           "--json"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert same.returncode == 0, same.stderr
    data = json.loads(same.stdout)
    assert data["changed"] == [] and data["num_common"] > 40 and not data["only_a"] and not data["only_b"]
    faulted = subprocess.run([sys.executable, "-m", "gatekeeper.cli", "compare", str(first.run_dir),
                              str(rollback.run_dir), "--json"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert faulted.returncode == 1, faulted.stderr
    worse = {w["id"] for w in json.loads(faulted.stdout)["got_worse"]}
    failed = {k for k, (status, blocking, _) in checks(rollback.summary).items() if status == "FAIL" and blocking}
    assert worse == failed and "golden.tool-weather.stream" in worse, (worse, failed)
