"""`gatekeeper init`: the three files it writes work as written (the run config and the policy
load in a dry run of `gatekeeper run -c`, the workflow passes actionlint), nothing is overwritten
without --force, and bad or missing input is one line, exit 3, nothing written."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from paths import ROOT

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
    gate = next(s for s in yaml.safe_load((tmp_path / FILES[2]).read_text())["jobs"]["gate"]["steps"]
                if s.get("id") == "gate")
    assert "env" not in gate and "gatekeeper run -c gatekeeper.yaml --out runs\n" in gate["run"], gate
    actionlint = shutil.which("actionlint") or shutil.which("actionlint", path=str(Path(sys.executable).parent))
    assert actionlint, "actionlint comes with the test extra"
    lint = subprocess.run([actionlint, "-no-color", str(tmp_path / FILES[2])], capture_output=True, text=True)
    assert lint.returncode == 0 and not lint.stdout.strip(), lint.stdout
    (tmp_path / "keyed").mkdir()  # the default writes them all, for contrast
    keyed = gk(tmp_path / "keyed", "init", "--reference", "http://a:1", "--candidate", "http://b:2", "--dir", ".")
    assert "--reference-key-env REFERENCE_API_KEY" in (tmp_path / "keyed" / FILES[2]).read_text(), keyed.stderr


@pytest.mark.parametrize("args,said", [
    (("--candidate", "http://b:2"), "--reference URL is required (no terminal to ask on)"),
    (("--reference", "bundled:reference", "--candidate", "http://b:2"), "--reference: 'bundled:reference' is not an http(s) URL"),
    (("--reference", "http://a:1", "--candidate", "ftp://b"), "--candidate:"),
])
def test_bad_input_is_one_line_exit_3_and_nothing_written(tmp_path, args, said):
    done = gk(tmp_path, "init", *args)
    assert done.returncode == 3 and said in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) <= 2 and list(tmp_path.iterdir()) == []
