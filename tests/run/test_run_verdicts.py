"""`gatekeeper run` on bundled targets with engine faults: the verdict, and the gate and check
that caught it. These use a small random checkpoint (gates 1-2); the golden-set cases that need
the trained model are in test_run_golden.py."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from junitparser import Error, Failure, JUnitXml  # noqa: E402
from run_util import gk_run  # noqa: E402

GATES = ("--gates", "startup,numerics")


def test_clean_candidate_promotes_with_all_reports(tmp_path, tiny_model_dir):
    out = gk_run(tmp_path, "--model", str(tiny_model_dir), *GATES)
    assert out.code == 0 and out.summary["verdict"] == "PROMOTE", out.stderr
    for name in ("correctness.html", "performance.html", "summary.json", "junit.xml", "summary.md", "records.jsonl"):
        assert (out.run_dir / name).is_file(), name
    assert out.gate("numerics")["status"] == "PASS"
    assert out.check("numerics.max_logprob_delta")["metrics"]["noise_floor"] is not None
    xml = JUnitXml.fromfile(str(out.run_dir / "junit.xml"))
    assert xml.failures == 0 and xml.errors == 0  # green in a CI test view
    for suite in xml:
        if suite.name in ("gatekeeper.startup", "gatekeeper.numerics"):  # each check's own time, within the gate's
            times = [case.time for case in suite]
            assert all(t <= suite.time + 0.001 for t in times) and max(times) > 0, (suite.name, times, suite.time)


def test_optional_import_rolls_back_at_startup_with_the_error(tmp_path, tiny_model_dir):
    out = gk_run(tmp_path, "--model", str(tiny_model_dir), "--candidate-fault", "optional-import", *GATES)
    assert out.code == 1 and out.summary["verdict"] == "ROLLBACK"
    ready = out.check("startup.ready.candidate")
    assert ready["status"] == "FAIL" and "No module named 'gk_flash_kernels'" in ready["reason"]
    assert out.check("numerics.not_run")["reason"] == "not run: gate 1 (startup) failed"
    red = [(case.name, r.message) for suite in JUnitXml.fromfile(str(out.run_dir / "junit.xml")) for case in suite
           for r in case.result if isinstance(r, (Failure, Error))]
    assert ("startup.ready.candidate", f"FAIL: {ready['reason']}") in red
    assert any(n == "verdict" and m.startswith("ROLLBACK") for n, m in red), red  # a stable name, the verdict in the message


def test_fused_norm_dtype_bf16_tp4_rolls_back(tmp_path, tiny_model_dir):
    opts = ("--candidate-opt", "dtype=bf16", "--candidate-opt", "tp=4", "--candidate-opt", "fused_norm=true")
    out = gk_run(tmp_path, "--model", str(tiny_model_dir), *opts, "--candidate-fault", "fused-norm-dtype", *GATES)
    assert out.code == 1 and out.summary["verdict"] == "ROLLBACK"
    canary = out.check("startup.canary.candidate")
    assert canary["status"] == "FAIL" and "!!!!" in canary["reason"]


def test_fused_norm_nan_is_caught_by_numerics_when_startup_is_skipped(tmp_path, tiny_model_dir):
    opts = ("--candidate-opt", "dtype=bf16", "--candidate-opt", "tp=2", "--candidate-opt", "fused_norm=true")
    out = gk_run(tmp_path, "--model", str(tiny_model_dir), *opts, "--candidate-fault", "fused-norm-dtype",
                 "--gates", "numerics")
    assert out.code == 1
    nan = out.check("numerics.nan_inf")
    assert nan["status"] == "FAIL" and nan["metrics"]["nan_inf"] > 0


def test_rope_drift_fails_the_logprob_deltas_without_nan(tmp_path, tiny_model_dir):
    """A finite drift (the wrong rope theta) is caught by the deltas at the reference's own top-k
    tokens, not by NaN: the numbers are all finite, just wrong."""
    out = gk_run(tmp_path, "--model", str(tiny_model_dir), "--candidate-fault", "rope-drift", "--gates", "numerics")
    assert out.code == 1 and out.summary["verdict"] == "ROLLBACK"
    assert out.check("numerics.nan_inf")["status"] == "PASS"
    delta = out.check("numerics.max_logprob_delta")
    assert delta["status"] == "FAIL" and delta["metrics"]["value"] > delta["metrics"]["limit"], delta["reason"]
    assert "top-5 tokens" in delta["reason"]


def test_silent_fallback_warning_is_reported_at_startup(tmp_path, tiny_model_dir):
    """The default policy: the new warning and the log rule are advisory; the kernel fallback
    the reference does not take is an unexplained path change, which rolls back
    (docs/bug-classes.md#rollback-conditions)."""
    out = gk_run(tmp_path, "--model", str(tiny_model_dir), "--candidate-fault", "silent-fallback", "--gates", "startup")
    new = out.check("startup.new_warnings")
    assert new["status"] == "WARN" and not new["blocking"]
    assert out.check("startup.log_rules")["status"] == "WARN"
    change = out.check("startup.path_change")
    assert change["status"] == "FAIL" and change["blocking"] and "fallback" in change["reason"], change
    assert out.summary["verdict"] == "ROLLBACK"


def test_a_candidate_that_lost_logprobs_rolls_back_on_one_finding_and_skips_numerics(tmp_path, tiny_model_dir):
    out = gk_run(tmp_path, "--model", str(tiny_model_dir), "--candidate-opt", "disable_logprobs=true", *GATES)
    assert out.code == 1 and out.summary["verdict"] == "ROLLBACK"
    assert [r for r in out.summary["reasons"] if "FAIL" in r and "capabilities" not in r] == [], out.summary["reasons"]
    scoring = out.check("numerics.scoring")
    assert scoring["status"] == "SKIP" and scoring["blocking"] and "echo" in scoring["reason"]
    assert "see startup.capabilities" in scoring["reason"]


def test_a_gate_that_judges_too_little_holds_the_run(tmp_path, tiny_model_dir):
    """The random checkpoint fails these golden cases exactly as the reference does: every case
    WARNs "reference fails too" and nothing is judged, which must HOLD, not PROMOTE."""
    policy = tmp_path / "policy.yaml"
    policy.write_text("version: 1\ngates:\n  golden:\n    cases: [canary-ok, echo-words, arith-mul]\n"
                      "    stream_variants: false\n    min_judged_share: 0.5\n")
    out = gk_run(tmp_path / "r", "--model", str(tiny_model_dir), "--policy", str(policy), "--gates", "startup,golden")
    coverage = out.check("golden.coverage")
    assert coverage["status"] == "FAIL" and not coverage["blocking"], coverage
    assert coverage["metrics"]["judged"] < coverage["metrics"]["total"] * 0.5
    assert out.gate("golden")["coverage"]["min_share"] == 0.5
    assert out.code == 2 and out.summary["verdict"] == "HOLD"
    assert any(r.startswith("golden.coverage: FAIL (advisory)") for r in out.summary["reasons"])


def test_a_gate_disabled_by_policy_is_shown_as_an_advisory_skip(tmp_path, tiny_model_dir):
    policy = tmp_path / "policy.yaml"
    policy.write_text("version: 1\ngates:\n  numerics:\n    enabled: false\n")
    out = gk_run(tmp_path / "r", "--model", str(tiny_model_dir), "--policy", str(policy), *GATES)
    disabled = out.check("numerics.disabled")
    assert disabled["status"] == "SKIP" and not disabled["blocking"] and "disabled by policy" in disabled["reason"]
    assert out.gate("numerics")["coverage"] is None
    assert out.code == 0 and out.summary["verdict"] == "PROMOTE"
