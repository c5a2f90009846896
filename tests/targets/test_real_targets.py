"""Gating engines the way users run them: URL targets (with or without `/v1`), the README's URL
example, asymmetric roles (a broken reference HOLDs, a candidate that dies ROLLBACKs), declared
execution paths, API keys and secrets that never reach an output file."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("torch")

from fault_proxy import fault_proxy  # noqa: E402
from rejudge_util import checks, gk_rejudge  # noqa: E402
from run_util import gk_run  # noqa: E402
from server_util import free_port, running_server  # noqa: E402
from paths import GK_TINY

STARTUP = ("--gates", "startup")


@pytest.fixture(scope="module")
def upstream(tiny_model_dir):
    with running_server(tiny_model_dir, "--profile", "optimized") as server:
        yield server


@pytest.mark.parametrize("suffix", ["/v1", "/v1/", "/"])
def test_the_openai_base_url_forms_reach_the_same_server(tmp_path, tiny_model_dir, upstream, suffix):
    out = gk_run(tmp_path, "--model", str(tiny_model_dir), "--candidate", upstream.url + suffix, *STARTUP)
    assert out.check("startup.health.candidate")["status"] == "PASS"
    assert out.check("startup.models.candidate")["status"] == "PASS", out.check("startup.models.candidate")
    cand = next(t for t in out.summary["targets"] if t["role"] == "candidate")
    assert cand["base_url"] == upstream.url


def test_a_url_candidate_without_logs_skips_the_log_rules_as_advisory(tmp_path, tiny_model_dir, upstream):
    out = gk_run(tmp_path, "--model", str(tiny_model_dir), "--candidate", upstream.url, *STARTUP)
    for name in ("log_rules", "new_warnings"):
        check = out.check(f"startup.{name}")
        assert check["status"] == "SKIP" and not check["blocking"] and "log_file" in check["reason"], check
    assert out.summary["verdict"] == "PROMOTE", out.summary["reasons"]


def test_a_url_candidate_with_a_log_file_has_its_log_checked(tmp_path, tiny_model_dir, upstream):
    log = tmp_path / "engine.log"
    log.write_text("INFO ready\nWARNING: falling back to the slow attention path\n")
    config = tmp_path / "run.yaml"
    config.write_text(f"candidate: {{kind: url, url: {upstream.url!r}, log_file: {str(log)!r}}}\n")
    out = gk_run(tmp_path / "out", "-c", str(config), "--model", str(tiny_model_dir), *STARTUP)
    rules = out.check("startup.log_rules")
    assert rules["status"] in ("WARN", "FAIL") and rules["metrics"]["matches"] >= 1, rules


def test_a_server_without_health_is_ready_by_its_models(tmp_path, tiny_model_dir, upstream):
    with fault_proxy(upstream.url, "no_health") as url:
        out = gk_run(tmp_path, "--model", str(tiny_model_dir), "--candidate", url, *STARTUP)
    health = out.check("startup.health.candidate")
    assert health["status"] == "WARN" and "no /health" in health["reason"], health
    assert out.check("startup.models.candidate")["status"] == "PASS"
    assert out.summary["verdict"] == "PROMOTE", out.summary["reasons"]


@pytest.mark.parametrize("mode", ["dead", "http500"])
def test_a_broken_reference_holds_it_never_rolls_back(tmp_path, tiny_model_dir, upstream, mode):
    if mode == "dead":
        out = gk_run(tmp_path, "--model", str(tiny_model_dir), "--reference", f"http://127.0.0.1:{free_port()}",
                     "--candidate", upstream.url, "--gates", "startup,numerics")
    else:
        with fault_proxy(upstream.url, "http500") as url:
            out = gk_run(tmp_path, "--model", str(tiny_model_dir), "--reference", url, "--candidate", upstream.url,
                         "--gates", "startup,numerics")
    assert out.code == 2 and out.summary["verdict"] == "HOLD", out.summary["reasons"]
    assert any("reference unusable" in r for r in out.summary["reasons"]), out.summary["reasons"]


def test_a_candidate_that_dies_mid_run_is_rolled_back_as_crashed(tmp_path, tiny_model_dir, upstream):
    with fault_proxy(upstream.url, "die", after=12) as url:
        out = gk_run(tmp_path, "--model", str(tiny_model_dir), "--candidate", url, "--gates", "startup,numerics")
    assert out.code == 1 and out.summary["verdict"] == "ROLLBACK", out.summary["reasons"]
    crashed = [c for g in out.summary["gates"] for c in g["checks"] if c["id"].endswith(".candidate_crashed")]
    assert crashed and crashed[0]["status"] == "FAIL" and crashed[0]["blocking"], crashed


@pytest.mark.parametrize("role", ["candidate", "reference"])
def test_an_engine_that_dies_behind_a_live_server_is_named_first(tmp_path, tiny_model_dir, upstream, role):
    """vLLM's EngineDeadError: the server keeps answering, every request HTTP 500 and /health 503.
    The candidate's death is the run's first reason (ROLLBACK); the reference's HOLDs."""
    with fault_proxy(upstream.url, "engine_dead", after=12) as url:
        targets = ("--candidate", url) if role == "candidate" else ("--reference", url, "--candidate", upstream.url)
        out = gk_run(tmp_path, "--model", str(tiny_model_dir), *targets, "--gates", "startup,numerics")
    reasons = out.summary["reasons"]
    if role == "candidate":
        assert out.code == 1 and out.summary["verdict"] == "ROLLBACK", reasons
        assert reasons[0].startswith("numerics.candidate_crashed: FAIL — the candidate's engine died at "), reasons
        assert "during gate numerics" in reasons[0] and "/health answers HTTP 503" in reasons[0], reasons
        gate = next(g for g in out.summary["gates"] if g["id"] == "numerics")
        assert gate["checks"][0]["id"] == "numerics.candidate_crashed"
    else:
        assert out.code == 2 and out.summary["verdict"] == "HOLD", reasons
        assert any("reference unusable" in r and "the reference's engine died at" in r for r in reasons), reasons


def test_an_unset_api_key_variable_is_exit_3_before_anything_starts(tmp_path, upstream):
    config = tmp_path / "run.yaml"
    config.write_text(f"candidate: {{kind: url, url: {upstream.url!r}, api_key_env: GK_TEST_UNSET_KEY}}\n")
    env = {k: v for k, v in os.environ.items() if k != "GK_TEST_UNSET_KEY"}
    out = gk_run(tmp_path / "out", "-c", str(config), env=env)
    assert out.code == 3 and "GK_TEST_UNSET_KEY" in out.stderr and out.summary is None, out.stderr


def test_planted_secrets_reach_no_output_file(tmp_path, tiny_model_dir):
    """A key in a named variable, a URL with userinfo and a token query, a launch command with
    --api-key: every file of the run directory is scanned for each secret."""
    key, userinfo, token = "sk-test-planted-9f8e7d", "hunter2pass", "tok-planted-5a4b"
    with running_server(tiny_model_dir, "--profile", "optimized", "--api-key", key) as server:
        config = tmp_path / "run.yaml"
        url = server.url.replace("http://", f"http://user:{userinfo}@") + f"?token={token}"
        config.write_text(
            f"reference: {{kind: launch, command: 'python -m gatekeeper.cli serve --port {{port}} --model {tiny_model_dir} "
            f"--api-key {{api_key}} --served-model-name m', api_key_env: GK_TEST_KEY, model: m}}\n"
            f"candidate: {{kind: url, url: {url!r}, api_key_env: GK_TEST_KEY}}\n")
        out = gk_run(tmp_path / "out", "-c", str(config), "--gates", "startup", env={**os.environ, "GK_TEST_KEY": key})
    assert out.run_dir is not None and out.summary is not None, out.stderr
    for path in out.run_dir.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            for secret in (key, userinfo, token):
                assert secret not in text, (path.name, secret)
    assert key not in out.stderr and userinfo not in out.stderr


def test_a_bf16_declared_url_candidate_is_judged_with_bf16_tolerances(tmp_path, tiny_model_dir, upstream):
    out = gk_run(tmp_path, "--model", str(tiny_model_dir), "--candidate", upstream.url, "--candidate-declare", "dtype=bf16",
                 "--gates", "startup,numerics")
    cand = next(t for t in out.summary["targets"] if t["role"] == "candidate")
    assert cand["declared"]["dtype"] == "bfloat16"
    tol = out.check("numerics.max_logprob_delta")["metrics"]
    assert tol["dtype"] == "bfloat16", tol


@pytest.mark.slow  # suite time (a clean-clone run took 16 min 42 s); the bundled default run is test_default_run_promotes
@pytest.mark.serial  # every gate: an advisory performance FAIL (a burst of another test's load) would HOLD it
def test_the_readme_url_example_promotes_two_healthy_identical_servers(tmp_path):
    """`gatekeeper run --reference http://… --candidate http://… --model my-model`, verbatim, with
    two bundled servers started as a user would start theirs: PROMOTE under the default policy."""
    with running_server(GK_TINY, "--profile", "optimized", "--served-model-name", "my-model") as ref, \
            running_server(GK_TINY, "--profile", "optimized", "--served-model-name", "my-model") as cand:
        # The command as the README writes it; the smoke policy (from the environment) keeps gate 5's
        # replay short — the default policy's full run is test_run_gk_tiny's.
        out = gk_run(tmp_path, "--reference", ref.url, "--candidate", cand.url + "/v1", "--model", "my-model",
                     env={**os.environ, "GATEKEEPER_POLICY": "gates/smoke.yaml"})
    assert out.code == 0 and out.summary["verdict"] == "PROMOTE", out.summary["reasons"]
    assert {t["model"] for t in out.summary["targets"]} == {"my-model"}


def test_a_launched_candidate_killed_mid_run_is_crashed_with_its_log_tail(tmp_path, tiny_model_dir):
    """The bundled candidate process is SIGKILLed once gate 1 has finished (as an OOM killer or a
    crash under load would): the gate it dies in records candidate_crashed with its log → ROLLBACK."""
    import json
    import signal
    import subprocess
    import sys
    import time

    psutil = pytest.importorskip("psutil")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "gatekeeper.cli", "run", "--out", str(out_dir), "--model",
                             str(tiny_model_dir), "--gates", "startup,numerics,golden", "--policy", "gates/smoke.yaml"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300  # liveness bound
        killed = False
        while time.monotonic() < deadline and proc.poll() is None and not killed:
            records = list(out_dir.glob("*/records.jsonl"))
            if records and any(json.loads(line).get("id") == "startup.coverage"
                               for line in records[0].read_text().splitlines() if line.strip()):
                for child in psutil.Process(proc.pid).children(recursive=True):
                    if "optimized" in " ".join(child.cmdline()):
                        child.send_signal(signal.SIGKILL)
                        killed = True
            time.sleep(0.05)
        assert killed, "the candidate process was not found"
        proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    summary = json.loads(next(out_dir.glob("*/summary.json")).read_text())
    crashed = [c for g in summary["gates"] for c in g["checks"] if c["id"].endswith(".candidate_crashed")]
    assert summary["verdict"] == "ROLLBACK" and proc.returncode == 1, summary["reasons"]
    assert crashed and crashed[0]["status"] == "FAIL" and crashed[0]["metrics"]["process_alive"] is False, crashed


def test_a_url_with_userinfo_and_a_key_sends_the_key_and_masks_both(tmp_path, tiny_model_dir):
    """userinfo plus api_key_env: the key goes as Bearer (said once), not the userinfo as Basic
    auth (which every request would be refused with); the password never reaches an output."""
    key, password = "sk-test-both-4c3b2a", "p4ss-userinfo-77"
    with running_server(tiny_model_dir, "--profile", "optimized", "--api-key", key) as server:
        url = server.url.replace("http://", f"http://gk:{password}@")
        config = tmp_path / "run.yaml"
        config.write_text(f"reference: {{kind: url, url: {url!r}, api_key_env: GK_TEST_KEY}}\n"
                          f"candidate: {{kind: url, url: {server.url!r}, api_key_env: GK_TEST_KEY}}\n")
        out = gk_run(tmp_path / "out", "-c", str(config), *STARTUP, env={**os.environ, "GK_TEST_KEY": key})
    assert out.check("startup.health.reference")["status"] == "PASS", out.stderr
    assert out.check("startup.canary.reference")["status"] in ("PASS", "WARN"), out.stderr  # answered (WARN: not "OK")
    assert out.stderr.count("the URL's user:password is not sent") == 1
    for path in out.run_dir.rglob("*"):
        if path.is_file():
            assert password not in path.read_text(errors="replace"), path.name
    assert password not in out.stderr
    assert "GK_TEST_KEY" not in os.environ
    again = gk_rejudge(out.run_dir, out=tmp_path / "rejudged")  # no key needed: no server is asked
    assert again.code == out.code and checks(again.summary) == checks(out.summary), again.stderr
    assert not [p for p in again.run_dir.rglob("*") if p.is_file() and password in p.read_text(errors="replace")]


def test_a_reference_that_refuses_the_key_holds_and_nothing_is_compared_with_it(tmp_path, tiny_model_dir):
    """Servers that want a key, gated without one: the reference is unusable (HOLD), the candidate
    is not blamed, and no comparison with the reference (capabilities, execution path) is made."""
    with running_server(tiny_model_dir, "--profile", "optimized", "--api-key", "sk-test-refused-1") as ref, \
            running_server(tiny_model_dir, "--profile", "optimized", "--api-key", "sk-test-refused-1") as cand:
        out = gk_run(tmp_path, "--reference", ref.url, "--candidate", cand.url, "--gates", "startup,numerics")
    assert out.code == 2 and out.summary["verdict"] == "HOLD", out.summary["reasons"]
    assert any(r.startswith("startup.health.reference: ERROR — reference unusable") for r in out.summary["reasons"])
    ids = {c["id"] for g in out.summary["gates"] for c in g["checks"]}
    assert not ids & {"startup.capabilities", "startup.path_change", "startup.execution_path"}, ids
    assert "the reference is unusable" in " ".join(out.gate("startup")["notes"])
