"""The matrix commands against real engines: `matrix plan` in its three formats, `run --matrix
--cell` on one bundled cell, `matrix run` running cells as separate processes and keeping
finished ones, and bad matrices or contradicting flags as one line with exit code 3."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from gatekeeper import exit_codes
from gatekeeper.matrix.cell import Cell
from gatekeeper.matrix.spec import load_matrix
from gatekeeper.matrix.sweep import CellOutcome, exit_code, kept_run, table
from gatekeeper.results import Verdict
from paths import ROOT

BUNDLED = "matrices/bundled.yaml"
FAULTED = "dtype=bfloat16,tp=2,fused_norm=on,prefix_caching=on"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout's gatekeeper, in every process it starts


def gk(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """`gatekeeper ARGS...` as a subprocess from the project root."""
    proc = subprocess.run([sys.executable, "-m", "gatekeeper.cli", *args], capture_output=True, text=True, cwd=ROOT,
                          env=ENV, timeout=timeout)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def run_dirs(out: Path) -> list[Path]:
    return sorted(p.parent for p in out.rglob("cell.json"))


def test_plan_formats_list_the_loaders_cells():
    cells = load_matrix(BUNDLED).cells
    ids = [c.id for c in cells]
    plan = json.loads(gk("matrix", "plan", BUNDLED, "--candidate-fault", "fused-norm-dtype").stdout)
    assert plan["format"] == "gatekeeper.matrix-plan/1" and plan["matrix"]["sha256"] == load_matrix(BUNDLED).sha256
    assert [c["id"] for c in plan["cells"]] == ids
    first = plan["cells"][0]
    assert first["axes"] == {"dtype": "float32", "tp": "1", "fused_norm": "off", "prefix_caching": "on"}
    assert first["argv"] == ["gatekeeper", "run", "--matrix", BUNDLED, "--cell", ids[0], "--candidate-fault", "fused-norm-dtype"]
    assert [c["id"] for c in plan["cells"] if c["expected"] == "ROLLBACK"] == [FAULTED, FAULTED.replace("caching=on", "caching=off")]

    github = gk("matrix", "plan", BUNDLED, "--format", "github").stdout
    assert github.count("\n") == 1  # one line, for $GITHUB_OUTPUT
    include = json.loads(github)["include"]
    assert [c["cell"] for c in include] == ids
    assert include[-1] == {"cell": ids[-1], "dtype": "bfloat16", "tp": "2", "fused_norm": "on", "prefix_caching": "off"}

    gitlab = yaml.safe_load(gk("matrix", "plan", BUNDLED, "--format", "gitlab").stdout)
    assert gitlab == {"parallel": {"matrix": [{"CELL": ids}]}}


def test_a_bad_matrix_is_exit_3_with_one_line_everywhere(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\naxes:\n  tp: [1, 2]\ncandidate: {target: bundled, opts: {tp: '{pp}'}}\n")
    for args in (("matrix", "plan", str(bad)), ("matrix", "run", str(bad), "--out", str(tmp_path)),
                 ("run", "--matrix", str(bad), "--cell", "tp=1", "--out", str(tmp_path))):
        proc = gk(*args)
        assert proc.returncode == exit_codes.USAGE, proc.stderr
        assert proc.stderr.strip() == f"gatekeeper: error: {bad}:4: candidate.opts.tp: {{pp}} names no axis (axes: tp)"
    assert list(tmp_path.iterdir()) == [bad]  # nothing started, nothing written


def test_flags_that_contradict_the_cell_and_a_lone_cell_are_exit_3(tmp_path):
    proc = gk("run", "--matrix", BUNDLED, "--cell", FAULTED, "--candidate-opt", "dtype=fp32", "--out", str(tmp_path))
    assert proc.returncode == exit_codes.USAGE
    assert f"--candidate-opt: dtype=fp32 contradicts cell {FAULTED}, which sets dtype=bfloat16" in proc.stderr
    proc = gk("run", "--cell", FAULTED, "--out", str(tmp_path))
    assert proc.returncode == exit_codes.USAGE and "--matrix is missing" in proc.stderr
    proc = gk("run", "--matrix", BUNDLED, "--cell", FAULTED, "--candidate", "bundled", "--out", str(tmp_path))
    assert proc.returncode == exit_codes.USAGE and "drop --candidate" in proc.stderr
    assert not list(tmp_path.iterdir())


def test_a_dry_run_names_the_cell_and_leaves_nothing_behind(tmp_path):
    matrix = tmp_path / "m.yaml"
    matrix.write_text("version: 1\naxes: {tp: [2]}\ncandidate: {target: bundled, opts: {tp: '{tp}'}}\n"
                      "policy: [{gates: {golden: {cases: [canary-ok]}}}]\n")
    out = tmp_path / "out"
    proc = gk("run", "--matrix", str(matrix), "--cell", "tp=2", "--dry-run", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"matrix {matrix} cell tp=2 (expected: nothing)\n")
    assert "candidate: bundled:optimized tp=2; dtype float32 (tp=2)" in proc.stdout
    assert "golden: 1 cases from" in proc.stdout  # the cell's policy fragment is in force
    assert not out.exists()


def test_run_one_bundled_cell_with_its_options(tmp_path):
    """The faulted cell: the fault bites only with the cell's options (bf16, tp 2, fused norm), so
    the ROLLBACK itself shows the candidate ran them; its log and summary say so too."""
    proc = gk("run", "--matrix", BUNDLED, "--cell", FAULTED, "--candidate-fault", "fused-norm-dtype",
              "--policy", "gates/smoke.yaml", "--gates", "startup,golden", "--out", str(tmp_path))
    assert proc.returncode == exit_codes.ROLLBACK, proc.stderr
    (run_dir,) = run_dirs(tmp_path)
    record = json.loads((run_dir / "cell.json").read_text())
    assert record == {"format": "gatekeeper.cell/1",
                      "matrix": {"name": "bundled", "path": BUNDLED, "sha256": load_matrix(BUNDLED).sha256},
                      "cell": FAULTED, "axes": {"dtype": "bfloat16", "tp": "2", "fused_norm": "on", "prefix_caching": "on"},
                      "declared": {"dtype": "bfloat16", "tp": "2", "label.fused_norm": "on", "label.prefix_caching": "on"},
                      "candidate": {"kind": "bundled", "profile": "optimized",
                                    "options": {"dtype": "bfloat16", "tp": "2", "fused_norm": "true", "prefix_caching": "true"}},
                      "expected": "ROLLBACK", "candidate_faults": ["fused-norm-dtype"],
                      "options_sha256": record["options_sha256"], "run_id": run_dir.name}
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["verdict"] == "ROLLBACK"
    candidate = next(t for t in summary["targets"] if t["role"] == "candidate")
    assert candidate["description"] == ("bundled:optimized dtype=bfloat16 tp=2 fused_norm=true prefix_caching=true "
                                        "faults=fused-norm-dtype")
    assert candidate["declared"]["label.fused_norm"] == "on"
    assert candidate["observed"]["dtype"] == "bfloat16" and candidate["observed"]["tp"] == "2"
    log = (run_dir / "candidate.log").read_text()
    assert "dtype=bfloat16" in log and "tp=2; fused_norm=on" in log
    assert "startup.canary.candidate: FAIL" in proc.stderr


TWO = """\
    version: 1
    name: two
    axes:
      tp: [1, 2]
    candidate:
      target: bundled:optimized
      opts: {tp: "{tp}"}
    policy:
      - when: {tp: 2}
        checks: [{match: "startup.log.*", blocking: false}]
    expect:
      - {verdict: PROMOTE}
    """


@pytest.mark.slow  # 14 s of real cell runs
def test_matrix_run_runs_cells_as_separate_processes_and_keeps_finished_ones(tmp_path):
    matrix = tmp_path / "two.yaml"
    matrix.write_text(textwrap.dedent(TWO))
    out = tmp_path / "out"
    args = ("matrix", "run", str(matrix), "--policy", "gates/smoke.yaml", "--gates", "startup", "--out", str(out))
    first = gk(*args)
    assert first.returncode == 0, first.stdout + first.stderr
    dirs = run_dirs(out)
    assert [d.parent.name for d in dirs] == ["tp=1", "tp=2"] and all(d.parent.parent == out / "two" for d in dirs)
    for run_dir, tp in zip(dirs, ("1", "2")):
        record = json.loads((run_dir / "cell.json").read_text())
        assert record["cell"] == f"tp={tp}" and record["expected"] == "PROMOTE"
        assert json.loads((run_dir / "summary.json").read_text())["verdict"] == "PROMOTE"
        console = (run_dir / "gatekeeper.log").read_text()  # each cell's own process printed only its own cell
        assert f"matrix two cell tp={tp} (expected PROMOTE)" in console and "verdict: PROMOTE" in console
        assert f"cell tp={'2' if tp == '1' else '1'}" not in console
        assert f"tp={tp};" in (run_dir / "candidate.log").read_text()
    policy = json.loads((dirs[1] / "summary.json").read_text())["policy"]
    assert policy == str(dirs[1] / "cell-policy.yaml")  # the tp=2 cell ran its merged policy
    assert yaml.safe_load(Path(policy).read_text())["checks"][0] == {"match": "startup.log.*", "blocking": False}
    assert json.loads((dirs[0] / "summary.json").read_text())["policy"] == "gates/smoke.yaml"
    assert "[1/2] tp=1: running (expected PROMOTE)" in first.stderr and "[2/2] tp=2: PROMOTE in" in first.stderr
    lines = first.stdout.splitlines()
    assert lines[0].split() == ["cell", "verdict", "expected", "match", "run"]
    assert [ln.split()[:4] for ln in lines[1:]] == [["tp=1", "PROMOTE", "PROMOTE", "yes"], ["tp=2", "PROMOTE", "PROMOTE", "yes"]]

    again = gk(*args)
    assert again.returncode == 0, again.stderr
    assert run_dirs(out) == dirs  # nothing ran again
    assert [ln.split()[:5] for ln in again.stdout.splitlines()[1:]] == [["tp=1", "PROMOTE", "PROMOTE", "yes", "kept"],
                                                                         ["tp=2", "PROMOTE", "PROMOTE", "yes", "kept"]]
    assert "matrix two: 2 cells (2 kept, 0 run)" in again.stderr

    record = yaml.safe_load((dirs[1] / "path-record.yaml").read_text())  # docs/bug-classes.md#path-record, written by the cell's run
    assert record["parallelism"] == {"tp": "2"} and record["result"]["deterministic_probe"] == "pass"
    merged = gk("report", "merge", str(out), "--out", str(tmp_path / "merged"))  # the two processes' runs, as one report
    assert merged.returncode == 0, merged.stdout + merged.stderr
    data = json.loads((tmp_path / "merged" / "merged.json").read_text())
    assert data["verdict"] == "PROMOTE" and [c["cell"] for c in data["cells"]] == ["tp=1", "tp=2"]
    assert all(c["met"] for c in data["cells"]) and data["localisation"] == "no cell failed"
    assert "localisation: no cell failed" in merged.stdout and (tmp_path / "merged" / "junit.xml").is_file()

    # Other options, or an edited matrix file, are another run: nothing would be kept.
    m = load_matrix(matrix)
    sha = json.loads((dirs[0] / "cell.json").read_text())["options_sha256"]
    assert kept_run(out / "two" / "tp=1", m, m.cells[0], sha) == (dirs[0], Verdict.PROMOTE)
    assert kept_run(out / "two" / "tp=1", m, m.cells[0], "0" * 64) is None
    matrix.write_text(textwrap.dedent(TWO) + "# edited\n")
    edited = load_matrix(matrix)
    assert kept_run(out / "two" / "tp=1", edited, edited.cells[0], sha) is None


@pytest.mark.slow  # ~2 min: 16 cells on the smoke policy's startup and numerics gates (the canary breaks at tp>1)
def test_the_fused_norm_fault_fails_exactly_its_cells_and_the_merge_localises_it(tmp_path):
    out = tmp_path / "out"
    swept = gk("matrix", "run", BUNDLED, "--candidate-fault", "fused-norm-dtype", "--policy", "gates/smoke.yaml",
               "--gates", "startup,numerics", "--out", str(out), timeout=1800)
    assert swept.returncode == 0, swept.stdout + swept.stderr  # every cell met its expectation
    merged = gk("report", "merge", str(out), "--out", str(tmp_path / "merged"))
    data = json.loads((tmp_path / "merged" / "merged.json").read_text())
    failed = sorted(c["cell"] for c in data["cells"] if c["verdict"] == "ROLLBACK")
    assert failed == ["dtype=bfloat16,tp=2,fused_norm=on,prefix_caching=off", FAULTED], failed
    assert merged.returncode == 1 and data["localisation"].startswith("fails when dtype=bfloat16 and tp>1 and fused_norm=on")
    assert "tp=1 passes" in data["localisation"] and "fused_norm=off passes" in data["localisation"]


def _outcome(verdict: str | None, expected: str | None, code: int | None = None) -> CellOutcome:
    cell = Cell((("tp", verdict or "none"),))
    return CellOutcome(cell=cell, verdict=Verdict(verdict) if verdict else None, expected=expected, kept=False, run_dir=None,
                       exit_code=exit_codes.FOR_VERDICT.get(verdict or "", 2) if code is None else code)


def test_the_sweeps_exit_code_and_table():
    assert exit_code([_outcome("PROMOTE", "PROMOTE"), _outcome("ROLLBACK", "ROLLBACK")]) == 0  # every expectation met
    assert exit_code([_outcome("PROMOTE", "PROMOTE"), _outcome("PROMOTE", "ROLLBACK")]) == 1  # a miss (a fault not caught)
    assert exit_code([_outcome("PROMOTE", None), _outcome("HOLD", None)]) == 2  # no expectations: the worst verdict
    assert exit_code([_outcome("HOLD", None), _outcome("ROLLBACK", None)]) == 1
    assert exit_code([_outcome(None, None, code=1)]) == 2  # a run that gave no verdict holds
    assert exit_code([_outcome("ROLLBACK", None), _outcome(None, "PROMOTE", code=3)]) == 3  # a cell's configuration error
    rows = table([_outcome("PROMOTE", "ROLLBACK"), _outcome("HOLD", None)]).splitlines()
    assert rows[1].split()[:4] == ["tp=PROMOTE", "PROMOTE", "ROLLBACK", "NO"] and rows[2].split()[:4] == ["tp=HOLD", "HOLD", "—", "—"]
