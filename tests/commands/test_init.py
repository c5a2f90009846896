"""`gatekeeper init`: the three files it writes work as written (the run config and the policy
load in a dry run of `gatekeeper run -c`, the workflow passes actionlint), nothing is overwritten
without --force, and bad or missing input is one line, exit 3, nothing written."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from paths import ROOT
from workflow_steps import load, run_step, step

FILES = ("gatekeeper.yaml", "gatekeeper-policy.yaml", ".github/workflows/gatekeeper.yml")


def gk(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("GATEKEEPER_")}
    return subprocess.run([sys.executable, "-m", "gatekeeper.cli", *args], capture_output=True, text=True, cwd=cwd,
                          stdin=subprocess.DEVNULL, timeout=120, env={**base, "PYTHONPATH": str(ROOT), **(env or {})})


def test_init_writes_a_config_a_policy_and_a_workflow_that_work(tmp_path):
    done = gk(tmp_path, "init", "--reference", "http://ref.internal:8000", "--candidate", "http://cand.internal:8000",
              "--candidate-dtype", "bf16")
    assert done.returncode == 0, done.stderr
    assert all((tmp_path / name).is_file() for name in FILES)
    config = yaml.safe_load((tmp_path / "gatekeeper.yaml").read_text())
    assert config["reference_key_env"] == "REFERENCE_API_KEY" and config["candidate_declare"] == {"dtype": "bf16"}
    assert "reference_declare: {dtype: bf16}" in (tmp_path / "gatekeeper.yaml").read_text()  # the hint for the undeclared one
    plan = gk(tmp_path, "run", "-c", "gatekeeper.yaml", "--dry-run", env={"REFERENCE_API_KEY": "", "CANDIDATE_API_KEY": ""})
    # the files load and the plan is printed; the made-up servers do not answer, so exit 3 naming both
    assert plan.returncode == 3 and plan.stderr.count("did not answer GET /v1/models") == 2, plan.stderr
    assert "policy: gatekeeper-policy.yaml" in plan.stdout and "url http://cand.internal:8000" in plan.stdout, plan.stdout
    assert "dtype bfloat16" in next(x for x in plan.stdout.splitlines() if x.startswith("candidate: ")), plan.stdout
    actionlint = shutil.which("actionlint") or shutil.which("actionlint", path=str(Path(sys.executable).parent))
    assert actionlint, "actionlint comes with the test extra"
    lint = subprocess.run([actionlint, "-no-color", str(tmp_path / FILES[2])], capture_output=True, text=True)
    assert lint.returncode == 0 and not lint.stdout.strip(), lint.stdout
    workflow = yaml.safe_load((tmp_path / FILES[2]).read_text())
    gate = next(s for s in workflow["jobs"]["gate"]["steps"] if s.get("id") == "gate")
    assert "gatekeeper run -c gatekeeper.yaml" in gate["run"] and not any(k.startswith("GATEKEEPER_") for k in gate["env"])


def test_init_overwrites_nothing_without_force(tmp_path):
    (tmp_path / "gatekeeper.yaml").write_text("mine: true\n")
    args = ("init", "--reference", "http://a:1", "--candidate", "http://b:2", "--no-keys")
    refused = gk(tmp_path, *args)
    assert refused.returncode == 3 and "gatekeeper.yaml" in refused.stderr and "--force" in refused.stderr
    assert (tmp_path / "gatekeeper.yaml").read_text() == "mine: true\n" and not (tmp_path / FILES[1]).exists()
    forced = gk(tmp_path, *args, "--force")
    assert forced.returncode == 0, forced.stderr
    assert "key_env" not in (tmp_path / "gatekeeper.yaml").read_text()  # --no-keys


def test_init_no_keys_writes_nothing_about_keys(tmp_path):
    """`--no-keys`: the run config, the workflow and the advice printed name no key variable, secret
    or key flag; the workflow still passes actionlint and the run config still loads."""
    done = gk(tmp_path, "init", "--reference", "http://a:1", "--candidate", "http://b:2", "--no-keys")
    assert done.returncode == 0, done.stderr
    for text in ((tmp_path / FILES[0]).read_text(), (tmp_path / FILES[2]).read_text(), done.stdout):
        assert not re.search(r"(?i)api_key|key.env|secrets\.|keys? (are|is) read|want keys", text), text
    text = (tmp_path / FILES[2]).read_text()
    header = text[:text.index("\n#\n")]
    assert "Settings → Secrets" not in header and "nothing to set in the repository's settings" in header, header
    gate = step(load(tmp_path / FILES[2]), "gate")
    assert set(gate["env"]) == {"CANDIDATE_INPUT"} and 'gatekeeper run -c gatekeeper.yaml "${args[@]}"\n' in gate["run"], gate
    actionlint = shutil.which("actionlint") or shutil.which("actionlint", path=str(Path(sys.executable).parent))
    assert actionlint, "actionlint comes with the test extra"
    lint = subprocess.run([actionlint, "-no-color", str(tmp_path / FILES[2])], capture_output=True, text=True)
    assert lint.returncode == 0 and not lint.stdout.strip(), lint.stdout
    (tmp_path / "keyed").mkdir()  # the default writes them all, for contrast
    keyed = gk(tmp_path / "keyed", "init", "--reference", "http://a:1", "--candidate", "http://b:2", "--dir", ".")
    text = (tmp_path / "keyed" / FILES[2]).read_text()
    assert "--reference-key-env REFERENCE_API_KEY" in text, keyed.stderr
    assert "under Settings → Secrets and variables → Actions:\n#   secrets    GATEKEEPER_REFERENCE_API_KEY" in text, text


@pytest.mark.parametrize("args,said", [
    (("--candidate", "http://b:2"), "--reference URL is required (no terminal to ask on)"),
    (("--reference", "bundled:reference", "--candidate", "http://b:2"), "--reference: 'bundled:reference' is not an http(s) URL"),
    (("--reference", "http://a:1", "--candidate", "ftp://b"), "--candidate:"),
])
def test_bad_input_is_one_line_exit_3_and_nothing_written(tmp_path, args, said):
    done = gk(tmp_path, "init", *args)
    assert done.returncode == 3 and said in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) <= 2 and list(tmp_path.iterdir()) == []


def test_the_init_workflow_installs_gatekeeper_and_gates_into_a_directory_of_its_own(tmp_path):
    """The written workflow's steps, run as the runner runs them in the fresh project: the install
    step installs the pinned INSTALL_GATEKEEPER (refusing the placeholder), never the project
    itself; the gate step runs into runs/<run id>-<attempt>/ beside an earlier run a persistent
    runner kept, hands on exactly its own run directory, passes the reference cache and the
    Run workflow's candidate; the CI cache around it is keyed on the run config and policy and
    saved even when the verdict fails the job; a self-hosted runner is explained; REPORT_URL, when
    set, becomes --report-url."""
    done = gk(tmp_path, "init", "--reference", "http://ref.internal:8000", "--candidate", "http://cand.internal:8000",
              "--no-keys")
    assert done.returncode == 0 and "INSTALL_GATEKEEPER" in done.stdout, done.stdout + done.stderr
    text = (tmp_path / FILES[2]).read_text()
    workflow = load(tmp_path / FILES[2])
    # (a) gatekeeper itself, pinned in one place
    assert not any(re.search(r"pip install (-e )?\.", s.get("run", "")) for s in workflow["jobs"]["gate"]["steps"])
    pin = workflow["env"]["INSTALL_GATEKEEPER"]
    assert "@vX.Y.Z" in pin and "INSTALL_GATEKEEPER under `env:` below, the one place it is set" in text
    install = step(workflow, "Install gatekeeper (the pinned INSTALL_GATEKEEPER)")
    refused = run_step(workflow, install["name"], tmp_path, tmp_path)
    assert refused.code == 3 and "::error::set INSTALL_GATEKEEPER" in refused.stdout, refused
    fake = tmp_path / "fake-python"  # records what pip was asked to install
    fake.mkdir()
    (fake / "python").write_text('#!/bin/sh\necho "$@" > "$RECORD"\n')
    (fake / "python").chmod(0o755)
    spec = "gatekeeper @ git+https://github.com/example/gatekeeper@v0.1.0"
    installed = run_step(workflow, install["name"], tmp_path, tmp_path, {
        "INSTALL_GATEKEEPER": spec, "RECORD": str(tmp_path / "pip-args"), "PATH": f"{fake}:{os.environ['PATH']}"})
    assert installed.code == 0 and (tmp_path / "pip-args").read_text() == f"-m pip install {spec}\n", installed
    # (d) pull requests and Run workflow with a candidate; where a self-hosted runner is needed
    assert "pull_request" in workflow["on"] and "candidate" in workflow["on"]["workflow_dispatch"]["inputs"]
    assert "self-hosted" in text and "internal network" in text
    # (c) the reference cache: restored before the gate, saved after it whatever the verdict
    names = [s.get("name") for s in workflow["jobs"]["gate"]["steps"]]
    restore, save = step(workflow, "cache"), step(workflow, "Save the reference's answers")
    assert names.index(restore["name"]) < names.index("Gate the candidate") < names.index(save["name"])
    assert restore["uses"].startswith("actions/cache/restore@") and save["uses"].startswith("actions/cache/save@")
    key = "gatekeeper-reference-${{ hashFiles('gatekeeper.yaml', 'gatekeeper-policy.yaml') }}-"
    assert restore["with"]["restore-keys"] == key and restore["with"]["key"].startswith(key)
    assert save["with"]["key"] == "${{ steps.cache.outputs.cache-primary-key }}" and "!cancelled()" in save["if"]
    assert restore["with"]["path"] == save["with"]["path"] == "${{ env.REFERENCE_CACHE }}"
    # (b) the gate, in a directory of its own, beside an earlier run the runner kept
    old = tmp_path / "runs" / "00000000T000000Z-old"
    old.mkdir(parents=True)
    (old / "summary.md").write_text("an earlier run\n")
    gated = run_step(workflow, "gate", tmp_path, tmp_path, {
        "GITHUB_RUN_ID": "4242", "GITHUB_RUN_ATTEMPT": "2", "CANDIDATE_INPUT": "bundled:reference",
        "GATEKEEPER_REFERENCE": "bundled:reference", "GATEKEEPER_GATES": "startup",  # the URLs answer nothing here
        "REPORT_URL": "https://reports.example/gatekeeper/4242-2"})
    assert gated.code == 0 and gated.outputs["exit_code"] == "0", gated.stderr
    run_dir = tmp_path / gated.outputs["run_dir"]
    assert run_dir.parent == tmp_path / "runs" / "4242-2" and (run_dir / "summary.md").is_file(), gated.outputs
    summary = json.loads((run_dir / "summary.json").read_text())
    assert [t["description"] for t in summary["targets"] if t["role"] == "candidate"] == ["bundled:reference"]
    assert "reference_cache" in summary, summary.keys()  # --reference-cache reached the run
    shown = run_step(workflow, "Job summary", tmp_path, tmp_path, {
        "RUN_DIR": gated.outputs["run_dir"], "GITHUB_STEP_SUMMARY": str(tmp_path / "step-summary")})
    said = (tmp_path / "step-summary").read_text()
    assert shown.code == 0 and said.startswith("## gatekeeper: ✅ PROMOTE"), said
    assert "[summary.json](https://reports.example/gatekeeper/4242-2/summary.json)" in said, said  # REPORT_URL: --report-url
    upload = step(workflow, "Upload the run directory (reports, records, logs)")
    assert upload["with"]["path"] == "${{ steps.gate.outputs.run_dir }}"
