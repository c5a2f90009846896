"""Everything is validated before anything starts: bad options, faults, engine options and
GATEKEEPER_* variables are exit 3 with one line naming the problem; `--dry-run` prints the plan."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gatekeeper.config.option_table import NOT_OPTIONS


def _gk(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("GATEKEEPER_")}
    return subprocess.run([sys.executable, "-m", "gatekeeper.cli", "run", *args], capture_output=True, text=True,
                          env={**base, **(env or {})}, timeout=120, check=False)


@pytest.mark.parametrize("args,env,message", [
    ((), {"GATEKEEPER_POLCY": "gates/smoke.yaml"}, "GATEKEEPER_POLCY is not a gatekeeper option; did you mean GATEKEEPER_POLICY?"),
    ((), {"GATEKEEPER_SEED": "abc"}, "GATEKEEPER_SEED: must be an integer, not 'abc'"),
    (("--timeout", "-5"), {}, "--timeout: must be a number above 0 and at most 86400, not '-5'"),
    (("--candidate-fault", "bogus-fault"), {}, "unknown fault 'bogus-fault'"),
    (("--candidate-opt", "dtype=bf17"), {}, "--dtype 'bf17': choose from"),
    (("--candidate-opt", "colour=blue"), {}, "unknown engine option 'colour'"),
    (("--candidate-declare", "dtype=bf17"), {}, "'bf17' is not a dtype"),
    (("--candidate-declare", "dtype=bf16"), {}, "declares dtype bfloat16 but the bundled engine runs float32"),
    (("--served-model", "m"), {}, "served_model: applies to URL and launch targets only"),
    (("--model", "no-such-dir"), {}, "model directory 'no-such-dir' not found"),
])
def test_bad_options_are_exit_3_before_anything_starts(args, env, message):
    r = _gk(*args, "--dry-run", env=env)
    assert r.returncode == 3 and message in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_the_project_s_own_variables_are_not_options():
    """docs/vllm.md tells people to export GATEKEEPER_VLLM_CACHE: a command run with it (and every
    other variable the scripts, hooks or tests read, all set at once) works, and a misspelt option
    beside them is still exit 3."""
    own = {name: "/tmp/somewhere" for name in sorted(NOT_OPTIONS)}
    assert len(own) >= 10
    r = _gk("--dry-run", env=own)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    r = _gk("--dry-run", env={**own, "GATEKEEPER_POLCY": "gates/smoke.yaml"})
    assert r.returncode == 3 and r.stderr.strip().splitlines() == [
        "gatekeeper: error: GATEKEEPER_POLCY is not a gatekeeper option; did you mean GATEKEEPER_POLICY?"], r.stderr


def test_the_flag_names_its_variable_and_the_variable_works():
    r = _gk("--dry-run", env={"GATEKEEPER_CANDIDATE_FAULT": "eos-ignored"})
    assert r.returncode == 0 and "faults=eos-ignored" in r.stdout, r.stdout + r.stderr
    help_text = subprocess.run([sys.executable, "-m", "gatekeeper.cli", "run", "--help"], capture_output=True,
                               text=True, check=True).stdout
    for var in ("GATEKEEPER_CANDIDATE_FAULT", "GATEKEEPER_POLICY", "GATEKEEPER_SERVED_MODEL", "GATEKEEPER_TIMEOUT"):
        assert var in help_text, var


def test_dry_run_prints_the_resolved_plan():
    r = _gk("--dry-run", "--candidate-opt", "dtype=bf16", "--candidate-declare", "tp=4", "--candidate-declare",
            "label.hardware=cpu")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "candidate: bundled:optimized dtype=bf16; dtype bfloat16 (tp=4, label.hardware=cpu)" in out, out
    assert "gate 4 longctx" in out and "golden: 58 cases" in out and "policy: gates/default.yaml" in out


def test_a_url_example_names_the_served_model():
    from server_util import free_port

    reference, candidate = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    r = _gk("--reference", f"http://{reference}", "--candidate", f"http://{candidate}/v1/", "--model", "my-model",
            "--dry-run")
    assert r.returncode == 3 and r.stderr.count("did not answer GET /v1/models") == 2, r.stderr  # nothing listens
    assert f"reference: url http://{reference}, model my-model" in r.stdout
    assert f"candidate: url http://{candidate}, model my-model" in r.stdout
