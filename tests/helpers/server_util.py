"""Start the bundled server as a real subprocess on a free loopback port, for tests.

    with running_server(model_dir, "--profile", "reference") as server:
        httpx.get(server.url + "/health")

The server's stderr goes to a file (`server.log()` reads it) so tests can check startup lines.
Waiting for readiness has a generous deadline, which is a liveness bound, not a timing assertion.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Iterator

import httpx

READY_DEADLINE_S = 120.0


def free_port() -> int:
    """A TCP port nothing listens on right now (the OS picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class ServerProcess:
    """A running `gatekeeper serve`: its base URL, process and log file."""

    url: str
    port: int
    proc: subprocess.Popen
    log_path: Path

    @property
    def v1(self) -> str:
        """Base URL for OpenAI clients."""
        return self.url + "/v1"

    def log(self) -> str:
        """Everything the server wrote to stderr/stdout so far."""
        return self.log_path.read_text(errors="replace")


def serve_command(model_dir: str | Path, port: int, *args: str) -> list[str]:
    """The argv that starts the server."""
    return [sys.executable, "-m", "gatekeeper.cli", "serve", "--model", str(model_dir), "--port", str(port), *args]


@contextmanager
def running_server(model_dir: str | Path, *args: str, env: dict[str, str] | None = None) -> Iterator[ServerProcess]:
    """Start the server, wait until /health answers 200, yield it, then stop it."""
    port = free_port()
    log_file = tempfile.NamedTemporaryFile(prefix="gatekeeper-serve-", suffix=".log", delete=False)
    proc = subprocess.Popen(serve_command(model_dir, port, *args), stdout=log_file, stderr=subprocess.STDOUT,
                            env={**os.environ, **(env or {})})
    server = ServerProcess(f"http://127.0.0.1:{port}", port, proc, Path(log_file.name))
    try:
        _wait_ready(server)
        yield server
    finally:
        stop(proc)
        log_file.close()
        os.unlink(log_file.name)


def _wait_ready(server: ServerProcess) -> None:
    deadline = time.monotonic() + READY_DEADLINE_S
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            raise RuntimeError(f"server exited with {server.proc.returncode} before ready:\n{server.log()[-3000:]}")
        try:
            if httpx.get(server.url + "/health", timeout=2.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"server not ready after {READY_DEADLINE_S:.0f}s:\n{server.log()[-3000:]}")


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM (graceful), then SIGKILL if it does not exit."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run_serve(model_dir: str | Path, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess:
    """Run `gatekeeper serve` expecting it to exit (a startup failure); returns the finished process."""
    return subprocess.run(serve_command(model_dir, free_port(), *args), capture_output=True, text=True, timeout=timeout)
