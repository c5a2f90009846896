"""A candidate whose engine dies of a defect a launch of the reference's build died of earlier in
the run is a HOLD (ERROR, "a defect both builds share"), not a ROLLBACK: vLLM 0.31.0 and 0.32.0
both die on a seeded request split by chunked prefill, and which main launch meets the trigger in
gate 5's traffic is chance. A death of another cause stays the candidate's (FAIL → ROLLBACK)."""

from __future__ import annotations

import pytest
import yaml

from gatekeeper.endpoints.client import Endpoint
from gatekeeper.endpoints.dead import DeadEngine
from gatekeeper.gates.interface import GateContext
from gatekeeper.results import Status
from gatekeeper.endpoints import engine_death
from gatekeeper.run import liveness
from gatekeeper.run.liveness import Liveness

CAUSE = "RuntimeError: CPU Generator does not use offset"
LOG = ["INFO step 1841", "Traceback (most recent call last):", '  File "gpu_model_runner.py", line 3412',
       f"{CAUSE} 0x7f3a2c", "ERROR EngineDeadError: engine core died"]


def _ctx() -> GateContext:
    ep = Endpoint("reference", "http://127.0.0.1:9", "m")  # never asked
    return GateContext(gate_id="shadow", reference=ep, candidate=ep, settings=None, blocking_rule=lambda check_id: True, capabilities={},
                       record=lambda r: None)


def _after(known: dict[str, dict[str, str]]) -> Liveness:
    dead = DeadEngine("candidate", "shadow", "2026-12-05T20:31:51Z", "HTTP 500: EngineDeadError", "POST /v1/chat/completions",
                      "HTTP 500", 6)
    return Liveness({"reference": False, "candidate": False}, {"reference": True, "candidate": True}, [],
                    {"candidate": dead}, {"candidate": LOG}, known)


def test_a_death_the_reference_build_had_too_holds_and_says_so():
    ctx = _ctx()
    known = {"reference": {engine_death.signature("RuntimeError: CPU Generator does not use offset 0x55aa01"): "longctx"}}
    assert liveness.judge(ctx, _after(known))
    check = ctx.checks[0]
    assert check.id == "shadow.candidate_crashed" and check.status is Status.ERROR, check
    assert "a launch of the reference's build died of the same cause in gate longctx" in check.reason, check.reason
    assert "not a regression of the candidate" in check.reason and "Next: re-run" in check.reason
    assert check.metrics["shared_with_reference_build"] == "longctx"


@pytest.mark.parametrize("known", [{}, {"candidate": {engine_death.signature(CAUSE): "longctx"}},
                                   {"reference": {"ValueError: another defect": "longctx"}}])
def test_a_death_the_reference_build_never_had_is_the_candidates(known):
    ctx = _ctx()
    assert liveness.judge(ctx, _after(known))
    check = ctx.checks[0]
    assert check.status is Status.FAIL and check.metrics["shared_with_reference_build"] is None, check
    assert f"its log says: {CAUSE}" in check.reason and "while the reference kept answering" in check.reason


def test_the_known_causes_survive_the_recording():
    after = _after({"reference": {engine_death.signature(CAUSE): "longctx"}})
    assert Liveness.from_json(yaml.safe_load(yaml.safe_dump(after.to_json()))) == after
    assert Liveness.from_json({k: v for k, v in after.to_json().items() if k != "known"}).known == {}  # older recordings


@pytest.mark.slow  # ~1 min: four launches of the bundled engine, gates 1, 4 and 5
def test_two_launches_of_a_build_that_dies_on_seeded_batches_never_roll_back(tmp_path):
    """Both targets launched with `seeded-batch-dies` (the bundled engine's copy of vLLM's defect):
    gate 4's batch-features copies die on both sides (a bug the reference has too), their root cause
    is kept per build, and when gate 5's traffic kills a main launch the run HOLDs, naming it."""
    pytest.importorskip("torch")
    from paths import GK_TINY
    from run_util import gk_run

    serve = f"python -m gatekeeper.cli serve --port {{port}} --model {GK_TINY} --profile optimized --fault seeded-batch-dies"
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({"reference": {"kind": "launch", "command": serve},
                                      "candidate": {"kind": "launch", "command": serve}}))
    out = gk_run(tmp_path / "out", "-c", str(config), "--gates", "startup,longctx,shadow")
    assert out.summary is not None, out.stderr
    features = out.check("longctx.batch_features")
    assert features["status"] == "WARN" and "a bug the reference has too" in features["reason"], features
    recorded = [yaml.safe_load(line) for line in (out.run_dir / "answers" / "liveness.jsonl").read_text().splitlines()]
    after_longctx = next(r for r in recorded if r["gate"] == "longctx")
    assert list(after_longctx["known"]["reference"].values()) == ["longctx"], after_longctx
    assert "EngineCoreError: CPU Generator does not use offset" in next(iter(after_longctx["known"]["reference"]))
    assert out.summary["verdict"] != "ROLLBACK", out.summary["reasons"]
    crashed = [c for g in out.summary["gates"] for c in g["checks"] if c["id"].endswith("candidate_crashed")]
    assert all(c["status"] == "ERROR" and "a defect both builds share" in c["reason"] for c in crashed), crashed
