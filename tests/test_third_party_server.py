"""A real third-party server: Hugging Face's `transformers serve` on the shipped gk-tiny checkpoint
(offline, from the local directory), as the candidate beside the bundled reference. It differs
from vLLM as real servers do — no `/version`, echo without prompt logprobs, streams that end
without `data: [DONE]` — and the run must say so (capability SKIPs, protocol WARNs), crash
nowhere, and HOLD because numerics cannot be judged, never ROLLBACK."""

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

GK_TINY = Path(__file__).resolve().parents[1] / "gatekeeper" / "models" / "gk-tiny"


@pytest.fixture(scope="module")
def transformers_serve(tmp_path_factory):
    exe = shutil.which("transformers") or str(Path(sys.executable).with_name("transformers"))
    if not Path(exe).exists():
        pytest.skip("transformers serve is not installed (pip install 'transformers[serving]' accelerate)")
    port = free_port()
    log = tmp_path_factory.mktemp("ts") / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([exe, "serve", "--host", "127.0.0.1", "--port", str(port), str(GK_TINY)], stdout=out,
                                stderr=subprocess.STDOUT, env={**os.environ, "HF_HUB_OFFLINE": "1"}, start_new_session=True)
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


@pytest.mark.slow  # about two minutes: the model load and a full default run against a server without batching
def test_transformers_serve_as_candidate_holds_with_its_differences_reported(tmp_path, transformers_serve):
    out = gk_run(tmp_path, "--candidate", transformers_serve, timeout=1200)
    assert out.summary is not None, out.stderr
    verdict, reasons = out.summary["verdict"], out.summary["reasons"]
    assert verdict == "HOLD" and out.code == 2, reasons
    assert any(r.startswith("numerics.") for r in reasons), reasons  # numerics cannot be judged: the reason
    scoring = out.check("numerics.scoring")
    assert scoring["status"] == "SKIP" and "echo" in scoring["reason"], scoring
    protocol = out.check("startup.protocol.candidate")
    assert protocol["status"] == "WARN" and "[DONE]" in protocol["reason"], protocol
    assert out.check("startup.version.candidate")["status"] == "WARN"
    assert not [c for g in out.summary["gates"] for c in g["checks"] if c["id"].endswith(".gate")]  # no gate crashed
