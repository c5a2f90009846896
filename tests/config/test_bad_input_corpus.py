"""The bad-input corpus (tests/config/bad_inputs/cases.yaml): every malformed policy, run config, traffic
file, golden set, matrix, pair store, flag value and variable gets its exit code (3) and one line
on stderr holding the expected fragment — no traceback, nothing on stdout, and nothing written or
changed on disk (no run directory, no dry run's scratch directory, no store created or altered).

Each case runs the real command line in a process of its own, in a scratch directory of its own:
the working directory, TMPDIR (where a dry run's scratch directory and a crash's traceback file
would go) and the inputs the case makes are all in it, and every file there is hashed before and
after. The process is forked from this one after `gatekeeper.cli` is imported (as a zygote does),
so a case costs its own work, not half a second of starting Python: it gets its own pid, signal
handlers, environment, working directory, stdout and stderr (files), and its exit status is the
`SystemExit` of `gatekeeper`'s main, or 1 with the traceback on stderr if anything escaped it.
"""

from __future__ import annotations

import hashlib
import signal
import importlib
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from paths import ROOT

CORPUS = ROOT / "tests" / "config" / "bad_inputs"
CASES: list[dict[str, Any]] = yaml.safe_load((CORPUS / "cases.yaml").read_text(encoding="utf-8"))["cases"]


def _flat(items: list[Any]) -> list[str]:
    return [s for item in items for s in (_flat(item) if isinstance(item, list) else [item])]


def _make(spec: dict[str, Any], where: Path) -> Path:
    """The file a case describes instead of committing it (large, binary or SQLite)."""
    path = where / spec["name"]
    if spec.get("dir"):
        path.mkdir()
    elif "text" in spec:
        path.write_text(spec["text"], encoding="utf-8")
    elif "hex" in spec:
        path.write_bytes(bytes.fromhex(spec["hex"]) * spec.get("repeat", 1))
    elif "deep_json" in spec:
        path.write_text("[" * spec["deep_json"] + "]" * spec["deep_json"] + "\n")
    elif "sqlite" in spec:
        db = sqlite3.connect(path)
        for statement in _flat(spec["sqlite"]):
            db.execute(statement)
        db.commit()
        db.close()
    else:
        raise ValueError(f"unknown make: {spec}")
    return path


def _snapshot(*roots: Path) -> dict[str, str]:
    """Every file and directory under `roots` with a hash of its bytes."""
    out = {}
    for root in roots:
        for p in [root, *sorted(root.rglob("*"))] if root.is_dir() else [root]:
            out[str(p)] = "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def test_the_manifest_is_well_formed():
    ids = [c["id"] for c in CASES]
    assert len(ids) == len(set(ids)), "case ids repeat"
    files = {c["file"] for c in CASES if "file" in c}
    on_disk = {str(p.relative_to(CORPUS)) for p in CORPUS.rglob("*") if p.is_file() and p.name != "cases.yaml"}
    assert files == on_disk, f"data files without a case: {on_disk - files}; cases without their file: {files - on_disk}"
    assert len(on_disk) >= 100
    for case in CASES:
        assert set(case) <= {"id", "file", "make", "args", "env", "exit", "stderr", "pending"}, case["id"]
        assert case.get("stderr") and isinstance(case["args"], list), case["id"]


@dataclass(frozen=True)
class Outcome:
    """What one case did: the finished process and every path under its scratch directory (and
    its data file) whose bytes changed, appeared or went."""

    run: subprocess.CompletedProcess
    changed: list[str]


def _run(case: dict[str, Any], tmp_path: Path) -> Outcome:
    """Run one case in `tmp_path` (its working directory, TMPDIR and made inputs all inside)."""
    scratch, cwd, tmpdir = tmp_path / "in", tmp_path / "cwd", tmp_path / "tmp"
    for d in (scratch, cwd, tmpdir):
        d.mkdir(parents=True)
    file = CORPUS / case["file"] if "file" in case else _make(case["make"], scratch) if "make" in case else None
    values = {"{file}": str(file), "{tmp}": str(scratch), "{root}": str(ROOT)}

    def fill(text: str) -> str:
        for key, value in values.items():
            text = text.replace(key, value)
        return text

    env = {k: v for k, v in os.environ.items() if not k.startswith("GATEKEEPER_")}
    env.update({k: fill(str(v)) for k, v in (case.get("env") or {}).items()})
    env["TMPDIR"] = str(tmpdir)
    watched = [tmp_path] + ([file] if file is not None and "file" in case else [])
    before = _snapshot(*watched)
    run = _forked([fill(str(a)) for a in case["args"]], cwd, env, tmp_path)
    after = _snapshot(*watched)
    return Outcome(run, sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p)))


PRELOADED = ("gatekeeper.cli", "gatekeeper.run.plan", "gatekeeper.run.runner", "gatekeeper.run.run_dir", "gatekeeper.config.run_config",
             "gatekeeper.config.policy", "gatekeeper.gates.registry", "gatekeeper.traffic.format", "gatekeeper.live.commands",
             "gatekeeper.matrix.spec", "gatekeeper.matrix.cell_run", "gatekeeper.matrix.job_matrix",
             "gatekeeper.golden.golden_set", "gatekeeper.traffic.store", "gatekeeper.perf.history")


def _forked(args: list[str], cwd: Path, env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess:
    """`gatekeeper ARGS` in a child forked from this process: its own cwd, environment, stdout
    and stderr; the exit status is main's SystemExit code (1 and a traceback if anything escaped)."""
    for module in PRELOADED:  # imported once, before the first fork, so a case pays for its own work only
        importlib.import_module(module)

    out, err = (tmp_path.with_name(f"{tmp_path.name}.{stream}") for stream in ("stdout", "stderr"))  # outside what is hashed
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            os.chdir(cwd)
            os.environ.clear()
            os.environ.update(env)
            tempfile.tempdir = None  # TMPDIR is read again
            for fd, path in ((1, out), (2, err)):
                target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                os.dup2(target, fd)
                os.close(target)
            sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # not pytest's capture
            sys.stderr = open(2, "w", encoding="utf-8", closefd=False)
            sys.argv = ["gatekeeper", *args]
            import gatekeeper.cli_exit
            from gatekeeper.cli import main

            gatekeeper.cli_exit._json_errors = False  # as a fresh process has it, whatever ran in this one before

            main.main(args, prog_name="gatekeeper")
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except BaseException:  # noqa: BLE001 — what a real process would print before dying
            traceback.print_exc()
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:  # noqa: BLE001
                    pass
            os._exit(code)
    deadline = time.monotonic() + 120  # the bound subprocess.run(timeout=120) gave: a hung case fails, the suite goes on
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0:
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail(f"gatekeeper {' '.join(args)} did not end within 120 s")
        time.sleep(0.005)
    code = os.waitstatus_to_exitcode(done[1])
    return subprocess.CompletedProcess(args, code, out.read_text(errors="replace"), err.read_text(errors="replace"))


@pytest.fixture(scope="module")
def outcomes(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    """Every selected case's outcome, one forked process after another."""
    selected = {item.callspec.params["case"]["id"] for item in request.session.items
                if item.originalname == "test_a_bad_input_is_one_line_and_an_exit_code"}
    todo = [c for c in CASES if c["id"] in selected and not c.get("pending")]
    return {c["id"]: _run(c, tmp_path_factory.mktemp(c["id"])) for c in todo}


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_a_bad_input_is_one_line_and_an_exit_code(case: dict[str, Any], outcomes: dict[str, Outcome]):
    if case.get("pending"):
        pytest.skip(f"pending: {case['pending']}")
    r = outcomes[case["id"]].run
    where = f"{case['id']}: exit {r.returncode}\nstderr: {r.stderr}\nstdout: {r.stdout[:500]}"
    assert r.returncode == case.get("exit", 3), where
    assert "Traceback" not in r.stderr + r.stdout, where
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gatekeeper: error: ") and r.stderr.endswith("\n"), where
    assert case["stderr"].replace("{root}", str(ROOT)) in lines[0], where
    assert r.stdout == "", where
    assert not outcomes[case["id"]].changed, f"{case['id']} wrote or changed: {', '.join(outcomes[case['id']].changed)}"
