"""A real third-party server: Hugging Face's `transformers serve` on the shipped gk-tiny checkpoint
(offline, from the local directory). It differs from vLLM as real servers do — no `/version`,
logprobs silently ignored, no echo or prompt logprobs, no /tokenize, streams that end without
`data: [DONE]` — and the run must say so (one capability finding, capability SKIPs, protocol
WARNs) and crash nowhere. Two instances of it (a no-op upgrade) HOLD: numerics cannot be judged.
As the candidate beside the bundled reference — another implementation of the same weights —
some long-context and shadow-traffic answers differ and, with no logprobs to review them as near
ties, compare exactly: the run may ROLLBACK on those answer comparisons, and says why."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

pytest.importorskip("torch")
pytest.importorskip("accelerate")

from run_util import gk_run  # noqa: E402
from server_util import free_port  # noqa: E402
from paths import GK_TINY, ROOT  # noqa: E402

SMOKE = ("--policy", str(ROOT / "gates" / "smoke.yaml"))  # every gate, smaller: transformers serve answers one request at a time


def _serve(tmp_path_factory):
    exe = shutil.which("transformers") or str(Path(sys.executable).with_name("transformers"))
    if not Path(exe).exists():
        pytest.skip("transformers serve is not installed (pip install 'transformers[serving]' accelerate)")
    port = free_port()
    log = tmp_path_factory.mktemp("ts") / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([exe, "serve", "--host", "127.0.0.1", "--port", str(port), str(GK_TINY)], stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                # One torch thread per server, as the bundled engine and scripts/vllm_cpu.sh: two
                                # servers with one OpenMP thread per core each starve each other on two cores.
                                env={**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")})
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180  # a liveness bound for the model load, not a timing assertion
    try:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"transformers serve exited: {log.read_text()[-2000:]}")
            try:
                if httpx.get(url + "/v1/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        else:
            pytest.fail("transformers serve did not come up")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


transformers_serve = pytest.fixture(scope="module")(_serve)
transformers_serve_twin = pytest.fixture(scope="module")(_serve)


def _differences_reported(out) -> None:
    assert out.summary is not None, out.stderr
    scoring = out.check("numerics.scoring")
    assert scoring["status"] == "SKIP" and "echo" in scoring["reason"], scoring
    protocol = out.check("startup.protocol.candidate")
    assert protocol["status"] == "WARN" and "[DONE]" in protocol["reason"], protocol
    assert out.check("startup.version.candidate")["status"] == "WARN"
    assert not [c for g in out.summary["gates"] for c in g["checks"] if c["id"].endswith(".gate")]  # no gate crashed


@pytest.mark.slow  # a server without batching: gates 1 and 2 here, every gate of the smoke policy in the next test
def test_two_transformers_servers_hold_because_numerics_cannot_be_judged(tmp_path, transformers_serve,
                                                                          transformers_serve_twin):
    out = gk_run(tmp_path, "--reference", transformers_serve, "--candidate", transformers_serve_twin, *SMOKE,
                 "--gates", "startup,numerics", timeout=1200)
    _differences_reported(out)
    assert out.summary["verdict"] == "HOLD" and out.code == 2, out.summary["reasons"]
    assert any(r.startswith("numerics.") for r in out.summary["reasons"]), out.summary["reasons"]
    assert out.check("startup.capabilities")["status"] == "PASS"  # the same server: nothing lost


@pytest.mark.slow
def test_transformers_serve_as_candidate_reports_what_it_lacks_and_never_passes(tmp_path, transformers_serve):
    out = gk_run(tmp_path, "--candidate", transformers_serve, *SMOKE, timeout=1200)
    _differences_reported(out)
    lost = out.check("startup.capabilities")
    assert lost["status"] == "FAIL" and lost["blocking"] and {"logprobs", "echo", "tokenize"} <= set(lost["metrics"]["lost"]), lost
    assert out.summary["verdict"] == "ROLLBACK", out.summary["reasons"]  # a lost feature is a regression
    # Besides the lost features, only exact answer comparisons the near-tie review could not soften
    # (golden cases, gate 4's answers, shadow traffic's answers), and the reports say why.
    failed = [c for g in out.summary["gates"] for c in g["checks"] if c["status"] == "FAIL" and c["blocking"]]
    for c in failed:
        assert c["id"] in ("startup.capabilities", "shadow.rule.answers_differ") or c["id"].startswith(("golden.", "longctx.")), c
        if c["id"] in ("longctx.session_agreement", "shadow.rule.answers_differ"):
            assert "near-tie review could not run: the candidate returns no logprobs" in c["reason"], c


PERF_ONLY = """version: 1
name: perf-third-party
gates:
  performance:
    baseline: reference     # under auto the bundled reference is no performance baseline for another engine
    levels: [2]
    pairs: 4
    sweep: [1, 2]
"""


@pytest.mark.slow
def test_performance_gate_against_transformers_serve(tmp_path, transformers_serve):
    """A URL candidate is measured against the reference target (not a launch of its own); the
    server refuses vLLM's ignore_eos (HTTP 422) and the gate drops it and says so; with four
    pairs nothing may read as a PASS unless its interval rules out a regression."""
    policy = tmp_path / "p.yaml"
    policy.write_text(PERF_ONLY)
    out = gk_run(tmp_path, "--gates", "performance", "--policy", str(policy), "--candidate", transformers_serve,
                 timeout=600)
    measurement = out.check("performance.measurement")
    assert measurement["status"] == "PASS" and measurement["metrics"]["baseline"].startswith("the reference target")
    assert measurement["metrics"]["output_lengths_controlled"] is False
    assert any("ignore_eos" in n for n in out.gate("performance")["notes"])
    for metric in ("output_tokens_per_s", "tpot_p50_s", "ttft_p95_s"):
        c = out.check(f"performance.c2.{metric}")
        assert c["status"] in ("PASS", "WARN", "FAIL"), c
        if c["status"] == "PASS":
            worst = (1 - c["metrics"]["ci"][0]) if metric == "output_tokens_per_s" else (c["metrics"]["ci"][1] - 1)
            assert worst <= c["metrics"]["threshold"], c
