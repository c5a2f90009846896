"""Real llama.cpp servers for tests: llama-cpp-python releases in cached venvs, started on free loopback ports.

    command = llama_command("0.3.36")                 # makes the venv and the GGUF once (scripts/llama_cpp.sh), ~10 min
    with running_llama("0.3.36") as server:           # ready in a few seconds
        httpx.get(server.url + "/v1/models")

`llama_command` is also what the tests put into launch targets' `command`, so a run started by
gatekeeper and a server started here are the same process. The venv and GGUF cache is the
script's (`$GATEKEEPER_LLAMA_CACHE`, default ~/.cache/gatekeeper/llama-cpp/VERSION): a CI machine
keeps it between runs, a fresh one builds llama-cpp-python from its sdist (the package registry).
"""

from __future__ import annotations

import os
import shlex
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

from paths import ROOT
from server_util import free_port
from vllm_util import stop_group

VERSION = "0.3.36"  # the newest llama-cpp-python release on the registry that builds here (docs/llama-cpp.md)
READY_DEADLINE_S = 300.0  # a liveness bound for loading the GGUF on a shared 2-core machine, not a timing assertion
BUILD_TIMEOUT_S = 3600  # the first call builds llama.cpp from source: about 10 minutes on 2 cores


@cache
def llama_command(version: str = VERSION) -> str:
    """The launch command (with `{port}`) serving gk-tiny with llama-cpp-python `version`; the
    venv and the GGUF are made on first use. Fails the test when the release cannot be built here."""
    done = subprocess.run(["bash", str(ROOT / "scripts" / "llama_cpp.sh"), version], capture_output=True, text=True,
                          timeout=BUILD_TIMEOUT_S)
    if done.returncode != 0:
        pytest.fail(f"scripts/llama_cpp.sh {version} failed:\n{done.stderr[-3000:]}")
    return done.stdout.strip().splitlines()[-1]


@dataclass
class LlamaServer:
    """A running llama-cpp-python server: its base URL, process and log file."""

    url: str
    proc: subprocess.Popen
    log_path: Path
    version: str

    def log(self) -> str:
        """Everything it printed so far."""
        return self.log_path.read_text(errors="replace")


@contextmanager
def running_llama(version: str = VERSION, *server_args: str) -> Iterator[LlamaServer]:
    """Start llama-cpp-python `version` serving gk-tiny (`server_args` appended to its command, e.g.
    `--interrupt_requests true`), wait until /v1/models answers (the server has no /health), yield it,
    stop its process group."""
    llama_command(version)
    port = free_port()
    argv = ["bash", str(ROOT / "scripts" / "llama_cpp.sh"), version, "--port", str(port), *server_args]
    log_file = tempfile.NamedTemporaryFile(prefix=f"llama-{version}-", suffix=".log", delete=False)
    proc = subprocess.Popen(argv, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True)
    server = LlamaServer(f"http://127.0.0.1:{port}", proc, Path(log_file.name), version)
    try:
        deadline = time.monotonic() + READY_DEADLINE_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama-cpp-python {version} exited with {proc.returncode} before ready:\n{server.log()[-3000:]}")
            try:
                if httpx.get(server.url + "/v1/models", timeout=2.0).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama-cpp-python {version} not ready after {READY_DEADLINE_S:.0f} s:\n{server.log()[-3000:]}")
            time.sleep(0.3)
        yield server
    finally:
        stop_group(proc)
        log_file.close()
        os.unlink(log_file.name)


def launch_target(version: str = VERSION, *server_args: str) -> dict:
    """A run config's launch target for llama-cpp-python `version`, as docs/llama-cpp.md writes it
    (the venv and GGUF are made here first, so that making them does not count against readiness)."""
    llama_command(version)
    extra = "".join(f" {shlex.quote(a)}" for a in server_args)
    return {"kind": "launch", "command": f"bash scripts/llama_cpp.sh {version} --port {{port}}{extra}", "cwd": str(ROOT),
            "model": "gk-tiny", "ready_timeout_s": READY_DEADLINE_S}
