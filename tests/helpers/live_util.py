"""Start `gatekeeper traffic record` / `gatekeeper shadow` as real subprocesses on free loopback
ports, for tests: the ready line on stderr names the bound URLs."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx

READY_DEADLINE_S = 60.0


@dataclass
class LiveProcess:
    """A running proxy: its process, the URL clients use, and the admin URL (shadow only)."""

    proc: subprocess.Popen
    url: str
    admin: str | None

    def verdict(self) -> dict:
        """GET /verdict."""
        assert self.admin is not None
        return httpx.get(self.admin + "/verdict", timeout=60).json()

    def stop(self) -> str:
        """SIGTERM and wait; the rest of its stderr."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            _, err = self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return err or ""


@contextmanager
def live(*args: str, new_session: bool = False) -> Iterator[LiveProcess]:
    """`gatekeeper ARGS...` until it prints its listening line; stopped on exit. `new_session`:
    in a process group of its own (its proxy and mirror processes), which a test may SIGKILL whole."""
    proc = subprocess.Popen([sys.executable, "-m", "gatekeeper.cli", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
                            start_new_session=new_session)
    deadline = time.monotonic() + READY_DEADLINE_S
    line = ""
    while time.monotonic() < deadline:
        line = proc.stderr.readline() if proc.stderr else ""
        if "listening on" in line or not line and proc.poll() is not None:
            break
    found = re.search(r"listening on (http://[\d.:]+)", line)
    if not found:
        proc.kill()
        raise AssertionError(f"gatekeeper {' '.join(args)} did not start: {line}{proc.stderr.read() if proc.stderr else ''}")
    admin = re.search(r"admin (http://[\d.:]+)", line)
    lp = LiveProcess(proc, found.group(1), admin.group(1) if admin else None)
    try:
        yield lp
    finally:
        lp.stop()
