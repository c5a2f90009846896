"""`startup.path_change` (docs/bug-classes.md#rollback-conditions): an execution path the candidate
takes and the reference does not — a kernel-fallback line, another fusion switch or attention
backend than it declares — is a blocking FAIL unless the policy lists it as explained; the run goes
on to the later gates."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

from run_util import gk_run  # noqa: E402
from server_util import running_server  # noqa: E402

from gatekeeper.targets.observed import from_log  # noqa: E402
from paths import GK_TINY


def _policy(tmp_path: Path, explained: str = "") -> str:
    policy = tmp_path / "policy.yaml"
    body = f"    explained_path_changes: [{explained}]\n" if explained else ""
    policy.write_text("version: 1\ngates:\n  startup:\n    canary_expect: OK\n" + body)
    return str(policy)


def test_the_engines_own_lines_name_the_attention_backend_and_switches():
    vllm = ["INFO 05-01 [cuda.py:240] Using Flash Attention backend on V1 engine.",
            "Initializing a V1 LLM engine with config: dtype=torch.bfloat16, enforce_eager=True, tensor_parallel_size=4"]
    assert from_log(vllm) == {"attention_backend": "flash_attention", "dtype": "bfloat16", "enforce_eager": "true",
                              "tp": "4"}
    bundled = ["scheduler: max_num_seqs=16; tp=2; fused_norm=on (dtype guard on)", "attention: naive fallback",
               "attention: fused kernel unavailable for this batch shape, using the naive fallback path"]
    assert from_log(bundled) == {"tp": "2", "fused_norm": "true", "attention_backend": "naive_fallback"}


@pytest.mark.slow  # ~19 s: out of the default suite's 15 minutes (CI runs it)
def test_an_unexplained_kernel_fallback_rolls_back_and_an_explained_one_does_not(tmp_path, tiny_model_dir):
    out = gk_run(tmp_path / "plain", "--model", str(tiny_model_dir), "--candidate-fault", "silent-fallback",
                 "--gates", "startup", "--policy", _policy(tmp_path))
    check = out.check("startup.path_change")
    assert check["status"] == "FAIL" and check["blocking"], check
    assert "fallback line the reference does not print" in check["reason"] and "falling back" in check["reason"]
    assert out.summary["verdict"] == "ROLLBACK" and out.code == 1, out.summary["reasons"]
    assert out.check("startup.log_rules")["status"] == "WARN"  # the log rule alone stays advisory

    explained = _policy(tmp_path, '{line: "naive fallback|falling back to a slower attention", reason: "known; the perf gate judges it"}')
    ok = gk_run(tmp_path / "explained", "--model", str(tiny_model_dir), "--candidate-fault", "silent-fallback",
                "--gates", "startup", "--policy", explained)
    check = ok.check("startup.path_change")
    assert check["status"] == "PASS" and "explained" in check["reason"], check
    assert ok.summary["verdict"] == "PROMOTE", ok.summary["reasons"]


def test_a_clean_bundled_pair_has_no_path_change(tmp_path, tiny_model_dir):
    out = gk_run(tmp_path, "--model", str(tiny_model_dir), "--candidate-opt", "dtype=bf16", "--candidate-opt",
                 "fused_norm=true", "--gates", "startup", "--policy", _policy(tmp_path))
    check = out.check("startup.path_change")
    # The bf16 dtype differs from the fp32 reference, but the candidate declares it: no change.
    assert check["status"] == "PASS" and check["metrics"]["keys_compared"] >= 1, check
    assert check["metrics"]["unexplained"] == 0


@pytest.mark.slow  # two real runs; the kernel-fallback test stays
def test_a_fusion_switch_the_reference_does_not_take_is_a_change_unless_explained(tmp_path):
    """Two URL targets with logs: the reference states fused_norm=off and the sdpa backend, the
    candidate (the same build, fusion on) states fused_norm=on: a key change nobody declared."""
    with running_server(GK_TINY, "--profile", "optimized") as ref, \
            running_server(GK_TINY, "--profile", "optimized", "--fused-norm") as cand:
        config = tmp_path / "run.yaml"
        config.write_text(f"reference: {{kind: url, url: {ref.url!r}, log_file: {str(ref.log_path)!r}}}\n"
                          f"candidate: {{kind: url, url: {cand.url!r}, log_file: {str(cand.log_path)!r}}}\n")
        out = gk_run(tmp_path / "plain", "-c", str(config), "--gates", "startup", "--policy", _policy(tmp_path))
        ok = gk_run(tmp_path / "explained", "-c", str(config), "--gates", "startup",
                    "--policy", _policy(tmp_path, "{key: fused_norm, reason: rolling the fusion out}"))
    check = out.check("startup.path_change")
    assert check["status"] == "FAIL" and "fused_norm false → true" in check["reason"], check
    assert check["metrics"]["keys_compared"] >= 5  # dtype, kv_cache_dtype, tp, attention_backend, fused_norm
    assert out.summary["verdict"] == "ROLLBACK", out.summary["reasons"]
    check = ok.check("startup.path_change")
    assert check["status"] == "PASS" and check["metrics"]["key_changes"] == 1, check
    assert ok.summary["verdict"] == "PROMOTE", ok.summary["reasons"]


def test_a_malformed_explanation_is_a_config_error_with_its_line(tmp_path, tiny_model_dir):
    policy = tmp_path / "bad.yaml"
    policy.write_text("version: 1\ngates:\n  startup:\n    explained_path_changes:\n      - {key: colour}\n")
    out = gk_run(tmp_path / "out", "--model", str(tiny_model_dir), "--gates", "startup", "--policy", str(policy))
    assert out.code != 0 and out.run_dir is None
    assert "bad.yaml:4" in out.stderr and "key must be one of" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr


def test_gate_5s_kernel_rule_honours_the_explanations_gate_1_applied():
    """The rule reads gate 1's path-change judgement, so an explained fallback does not roll the
    run back at gate 5 (its log lines are read only when gate 1 did not judge path changes)."""
    from report_runs import _check, _gate

    from gatekeeper.evidence import Table
    from gatekeeper.gates.shadow.earlier_rules import earlier_rule
    from gatekeeper.results import Status

    line = Table("matched log lines", ["rule", "severity", "line"],
                 [["(?i)fall(ing)? ?back", "WARN", "WARNING: falling back to a slower attention path"]])
    logs = _check("startup", "log_rules", Status.WARN, "1 line matched", evidence=[line])

    def rule(*checks):
        return earlier_rule("kernel_or_dtype_change", [_gate("startup", 1, "Startup", list(checks))])

    explained = _check("startup", "path_change", Status.PASS, "1 execution-path change(s), each explained by the policy")
    assert rule(logs, explained).status is Status.PASS
    unexplained = _check("startup", "path_change", Status.FAIL, "unexplained execution-path change: fallback")
    assert rule(logs, unexplained).status is Status.FAIL
    assert rule(logs).status is Status.FAIL  # a run without the path-change check: the raw lines count
