"""Run a GitHub Actions workflow's `run:` steps here as the runner runs them: `bash -e`, the
workflow's and the step's `env:`, a `$GITHUB_OUTPUT` file, and `gatekeeper` being this checkout's.

An `env:` value that is an expression (`${{ vars.X }}`) cannot be evaluated here: the test gives
its value, and one it does not give is empty, as an unset repository variable or secret is.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from paths import ROOT


def load(path: Path) -> dict[str, Any]:
    """The workflow file as data (`on:` stays a string key: PyYAML reads a bare `on` as True)."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if True in data:
        data["on"] = data.pop(True)
    return data


def step(workflow: dict[str, Any], name: str, job: str = "gate") -> dict[str, Any]:
    """The job's step whose `name` or `id` is `name`."""
    return next(s for s in workflow["jobs"][job]["steps"] if name in (s.get("name"), s.get("id")))


def shell_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """An environment whose `gatekeeper` command is this checkout's, without the caller's
    GATEKEEPER_* variables (they are options)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "gatekeeper"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m gatekeeper.cli "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IEXEC)
    base = {k: v for k, v in os.environ.items() if not k.startswith("GATEKEEPER_")}
    return {**base, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(ROOT), **extra}


@dataclass(frozen=True)
class StepRun:
    """What a step did: its exit code, output, and the outputs it wrote to $GITHUB_OUTPUT."""

    code: int
    stdout: str
    stderr: str
    outputs: dict[str, str]


def run_step(workflow: dict[str, Any], name: str, cwd: Path, tmp_path: Path, given: dict[str, str] | None = None,
             job: str = "gate") -> StepRun:
    """Run one `run:` step in `cwd`: the workflow's literal env, then the step's (an expression's
    value from `given`, else empty), then the rest of `given`; GITHUB_RUN_ID 1 and attempt 1
    unless given."""
    given = dict(given or {})
    env = {"GITHUB_RUN_ID": "1", "GITHUB_RUN_ATTEMPT": "1"}
    for layer in (workflow.get("env") or {}, step(workflow, name, job).get("env") or {}):
        for key, value in layer.items():
            env[key] = given.get(key, "") if "${{" in str(value) else str(value)
    env |= given
    output = tmp_path / f"github_output_{abs(hash(name))}"
    output.write_text("")
    proc = subprocess.run(["bash", "-e", "-c", step(workflow, name, job)["run"]], cwd=cwd, capture_output=True,
                          text=True, timeout=600, env=shell_env(tmp_path, GITHUB_OUTPUT=str(output), **env))
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
    return StepRun(proc.returncode, proc.stdout, proc.stderr, outputs)
