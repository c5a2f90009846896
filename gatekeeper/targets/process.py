"""Targets gatekeeper starts itself: a launch command, or the bundled engine (which is the
launch command `python -m gatekeeper.cli serve ...`). The log is captured to a file, masked as
it is written (by the watchdog the command runs under, which is handed the target's key).

`stop` may come from another thread while `start` is still waiting for the server (a run
interrupted while its targets come up): `start` then stops what it launched and returns."""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from gatekeeper.endpoints.client import Endpoint
from gatekeeper.errors import EndpointError
from gatekeeper.targets.interface import Started, Target, TargetSpec
from gatekeeper.targets.watchdog import SECRETS_ENV


def free_port() -> int:
    """A free TCP port on the loopback interface."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bundled_command(spec: TargetSpec, port: int) -> list[str]:
    """argv that serves the bundled engine for a bundled spec."""
    argv = [sys.executable, "-m", "gatekeeper.cli", "serve", "--host", "127.0.0.1", "--port", str(port),
            "--profile", spec.profile]
    if spec.model:
        argv += ["--model", spec.model]
    for key, value in spec.engine_options:
        flag = "--" + key.replace("_", "-")
        if value in ("true", "True", True):
            argv.append(flag)
        elif value in ("false", "False", False):
            argv.append("--no-" + key.replace("_", "-"))
        else:
            argv += [flag, str(value)]
    for fault in spec.faults:
        argv += ["--fault", fault]
    return argv


class ProcessTarget(Target):
    """A server process started on a free loopback port and stopped afterwards."""

    def __init__(self, role: str, spec: TargetSpec) -> None:
        self.role = role
        self.spec = spec
        self.proc: subprocess.Popen | None = None
        self.log_path: Path | None = None
        self._stopping = threading.Event()
        self._launch_lock = threading.Lock()

    def _argv(self, port: int) -> list[str]:
        if self.spec.kind == "bundled":
            return bundled_command(self.spec, port)
        assert self.spec.command is not None
        return shlex.split(self.spec.command.format(port=port, model=self.spec.model or "", api_key=self.api_key() or ""))

    def start(self, log_dir: str) -> Started:
        """Launch, then poll the health path (or `/v1/models` where the server has no health
        endpoint) until ready, the process exits, or time runs out."""
        port = free_port()
        base_url = f"http://127.0.0.1:{port}"
        self.log_path = Path(log_dir) / f"{self.role}.log"
        env = {**os.environ, **dict(self.spec.env), SECRETS_ENV: json.dumps(self.spec.secrets())}
        argv = self._argv(port)
        t0 = time.perf_counter()
        log = open(self.log_path, "wb")
        # Through the watchdog (gatekeeper/targets/watchdog.py), in a process group of its own: the
        # engine and what it starts die with this run, even when the run is SIGKILLed.
        wrapped = [sys.executable, "-m", "gatekeeper.targets.watchdog", str(os.getpid()), "--", *argv]
        try:
            with self._launch_lock:
                if self._stopping.is_set():
                    return Started(base_url, self.spec.model, False, error="stopped before launch", log_path=str(self.log_path))
                self.proc = subprocess.Popen(wrapped, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.spec.cwd,
                                             start_new_session=True)
        except OSError as e:
            return Started(base_url, self.spec.model, False, error=f"cannot launch {argv[0]}: {e}", log_path=str(self.log_path))
        finally:
            log.close()
        deadline = t0 + self.spec.ready_timeout_s
        ep = Endpoint(self.role, base_url, self.spec.model or "", self.api_key(), timeout_s=2.0, key_source=self.spec.key_source,
                      watch_death=False)
        try:
            while time.perf_counter() < deadline and not self._stopping.is_set():
                code = self.proc.poll()
                if code is not None:
                    tail = "\n".join(self.log_lines()[-15:])
                    return Started(base_url, None, False, error=f"exited with code {code} before ready; log tail:\n{tail}",
                                   log_path=str(self.log_path))
                try:
                    status = ep.get(self.spec.health_path).status_code
                    if status in (404, 405, 501):  # no health endpoint: ready once it lists its models
                        status = ep.get("/v1/models").status_code
                    if status == 200:
                        return Started(base_url, None, True, time.perf_counter() - t0, log_path=str(self.log_path))
                except EndpointError:
                    pass
                self._stopping.wait(0.1)
        finally:
            ep.close()
        interrupted = self._stopping.is_set()
        self.stop()
        if interrupted:
            return Started(base_url, None, False, error="stopped while starting", log_path=str(self.log_path))
        tail = "\n".join(self.log_lines()[-15:])
        return Started(base_url, None, False, error=f"not ready after {self.spec.ready_timeout_s:g} s (ready_timeout_s)"
                       + (f"; log tail:\n{tail}" if tail else "; it printed nothing"), log_path=str(self.log_path))

    def stop(self) -> None:
        """SIGTERM the process group, then SIGKILL if it lingers; a `start` still waiting gives up."""
        self._stopping.set()
        with self._launch_lock:
            pass  # a launch in progress has its process now
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()

    def log_lines(self) -> list[str]:
        """The captured log so far."""
        if self.log_path is None or not self.log_path.exists():
            return []
        return self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()

    def has_log(self) -> bool:
        """A process gatekeeper started: its output is captured."""
        return True

    def alive(self) -> bool:
        """Whether the process is still running."""
        return self.proc is not None and self.proc.poll() is None

    def process_group(self) -> int | None:
        """The watchdog's process group (start_new_session: the watchdog leads it, the engine
        and whatever it forks are in it)."""
        return self.proc.pid if self.alive() and self.proc is not None else None
