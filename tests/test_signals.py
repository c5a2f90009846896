"""A run ends cleanly whatever ends it: SIGTERM (CI cancellation, `timeout`) stops the engines it
started and exits 128 + 15 with one line; SIGKILL of gatekeeper leaves no engine behind either
(each runs under gatekeeper/targets/watchdog.py, which takes its process group down)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[1]


def _pids_in_group(pgid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if os.getpgid(int(d.name)) == pgid:
                    out.append(int(d.name))
            except (ProcessLookupError, PermissionError):
                pass
    return out


def _watchdogs(parent: int) -> list[int]:
    """The watchdog processes (each its own process group) a run started."""
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                argv = (d / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"gatekeeper.targets.watchdog" in argv and str(parent).encode() in argv:
                found.append(int(d.name))
    return found


def _run_until_targets_are_up(tmp_path: Path) -> tuple[subprocess.Popen, list[int]]:
    err = open(tmp_path / "stderr.txt", "w")
    proc = subprocess.Popen([sys.executable, "-m", "gatekeeper.cli", "run", "--policy", "gates/smoke.yaml", "--out",
                             str(tmp_path / "out")], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.monotonic() + 120  # a liveness bound for two engines to start, not a timing assertion
    while time.monotonic() < deadline:
        if "gate 1" in (tmp_path / "stderr.txt").read_text():
            groups = _watchdogs(proc.pid)
            if len(groups) == 2 and all(len(_pids_in_group(g)) >= 2 for g in groups):
                return proc, groups
        assert proc.poll() is None, (tmp_path / "stderr.txt").read_text()
        time.sleep(0.2)
    proc.kill()
    pytest.fail("the run's targets did not come up")


def _gone(groups: list[int], within_s: float) -> list[int]:
    deadline = time.monotonic() + within_s  # a liveness bound (the watchdog's grace is 10 s), not a timing assertion
    while time.monotonic() < deadline:
        left = [p for g in groups for p in _pids_in_group(g)]
        if not left:
            return []
        time.sleep(0.2)
    for g in groups:  # leave nothing behind, whatever the assertion says
        try:
            os.killpg(g, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return left


def test_sigterm_stops_the_engines_and_exits_143(tmp_path):
    proc, groups = _run_until_targets_are_up(tmp_path)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=120) == 128 + signal.SIGTERM
    assert not _gone(groups, 30)
    last = (tmp_path / "stderr.txt").read_text().strip().splitlines()[-1]
    assert last.startswith("gatekeeper: error: stopped by SIGTERM") and "Traceback" not in (tmp_path / "stderr.txt").read_text()


def test_sigkill_of_gatekeeper_leaves_no_engine_behind(tmp_path):
    proc, groups = _run_until_targets_are_up(tmp_path)
    proc.kill()
    proc.wait(timeout=30)
    assert not _gone(groups, 30)
    logs = list((tmp_path / "out").glob("*/*.log"))
    assert any("the gatekeeper process that launched this target is gone" in p.read_text() for p in logs)
