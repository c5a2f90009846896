"""Two engines gatekeeper starts from commands are measured in launch rounds: each round starts
the reference's build and the candidate's afresh (the order alternating), as the bundled pair's
do — not one process per side, whose spread between processes no number of pairs averages away.
The engines are the bundled server started from a command line, as a real engine is (vLLM's own
launched pair is in the real-engine tests' docs/vllm.md run)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from run_util import gk_run

POLICY = """version: 1
name: launched-pair
gates:
  performance:
    levels: [1]
    pairs: 4
    launches: 1
    rounds: [2, 2]
    round_pairs: 2
    warmup_requests: 1
    sweep: [1]
"""


@pytest.mark.slow  # four launches and their load: ~40 s
def test_an_engine_pair_started_from_commands_is_launched_afresh_each_round(tmp_path: Path, tiny_model_dir):
    serve = f"python -m gatekeeper.cli serve --port {{port}} --model {tiny_model_dir} --served-model-name m"
    config = tmp_path / "run.yaml"
    config.write_text(f"reference: {{kind: launch, command: '{serve} --api-key {{api_key}}', api_key_env: GK_REF_KEY, model: m}}\n"
                      f"candidate: {{kind: launch, command: '{serve}', model: m}}\n")
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    out = gk_run(tmp_path / "out", "-c", str(config), "--policy", str(policy), "--gates", "performance",
                 env={**os.environ, "GK_REF_KEY": "sk-ref-key-1"})
    assert out.summary is not None and out.run_dir is not None, out.stderr
    primary = out.check("performance.primary")
    assert primary["metrics"]["rounds"] == 2, primary
    assert primary["metrics"]["launched_first"] == ["baseline", "candidate"]
    measurement = out.check("performance.measurement")
    assert "launched afresh" in measurement["metrics"]["baseline"]
    assert measurement["metrics"]["baseline_failed_requests"] == 0  # the launched reference's key reached it
    logs = {p.name for p in out.run_dir.glob("*.log")}
    assert {"baseline.log", "baseline-2.log", "candidate-for-performance.log", "candidate-for-performance-2.log"} <= logs
