"""A run ends cleanly whatever ends it. SIGTERM (CI cancellation, `timeout`), SIGINT (Ctrl-C) and
SIGKILL arrive at a random point of a run with a bundled reference and a launch-target candidate
whose command forks a helper: nothing the run started is left a few seconds later (each target
runs under gatekeeper/targets/watchdog.py, which takes its process group down when gatekeeper is
gone), the run directory says it is incomplete, and the key the launch command printed never
reached its log (masked as written)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from paths import ROOT

pytest.importorskip("torch")

KEY = "sk-signals-test-key-7731"
HELPER = "31337"  # the helper is `sleep 31337`: found by its argv


def _config(tmp_path: Path) -> Path:
    """Bundled reference; the candidate is a launch command that forks a helper, prints its key
    and then serves the bundled optimized path."""
    script = tmp_path / "launch.sh"
    script.write_text(f"#!/bin/sh\nsleep {HELPER} &\necho \"starting with key $GK_KEY\"\n"
                      f"exec {sys.executable} -m gatekeeper.cli serve --host 127.0.0.1 --port \"$1\" --profile optimized\n")
    script.chmod(0o755)
    config = tmp_path / "run.yaml"
    config.write_text(f"candidate:\n  kind: launch\n  command: {script} {{port}}\n  env: {{GK_KEY: {KEY}}}\n"
                      f"  api_key_env: GK_KEY\n")
    return config


def _pids(match) -> list[int]:
    """Every process `match(pid)` is true for (one that went meanwhile is left out)."""
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if match(int(d.name)):
                    found.append(int(d.name))
            except (OSError, ProcessLookupError):
                continue
    return found


def _processes(marker: bytes) -> list[int]:
    return _pids(lambda pid: marker in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"))


def _pids_in_group(pgid: int) -> list[int]:
    return _pids(lambda pid: os.getpgid(pid) == pgid)


def _watchdogs(parent: int) -> list[int]:
    """The watchdog processes (each its own process group) a run started."""
    return [p for p in _processes(b"gatekeeper.targets.watchdog")
            if str(parent).encode() in (Path(f"/proc/{p}/cmdline").read_bytes().split(b"\0"))]


def _start(tmp_path: Path, *extra: str) -> subprocess.Popen:
    err = open(tmp_path / "stderr.txt", "w")
    env = {**os.environ, "GK_KEY": KEY}
    # SIGINT as a terminal's Ctrl-C finds it: a suite started as a background job (`pytest &` in a
    # non-interactive shell) passes SIGINT down ignored, and Python then leaves it ignored.
    return subprocess.Popen([sys.executable, "-m", "gatekeeper.cli", "run", "-c", str(_config(tmp_path)), "--policy",
                             "gates/smoke.yaml", "--out", str(tmp_path / "out"), *extra], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=err, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _until_targets_are_up(proc: subprocess.Popen, tmp_path: Path) -> list[int]:
    deadline = time.monotonic() + 180  # a liveness bound for two engines to start, not a timing assertion
    while time.monotonic() < deadline:
        if "gate 1" in (tmp_path / "stderr.txt").read_text():
            groups = _watchdogs(proc.pid)
            if len(groups) == 2 and all(len(_pids_in_group(g)) >= 2 for g in groups) and _processes(HELPER.encode()):
                return groups
        assert proc.poll() is None, (tmp_path / "stderr.txt").read_text()
        time.sleep(0.2)
    proc.kill()
    pytest.fail("the run's targets did not come up")


def _left_after(groups: list[int], within_s: float) -> list[int]:
    """What is still running of the run's targets (and the helper) `within_s` after the run ended."""
    deadline = time.monotonic() + within_s  # a liveness bound, not a timing assertion
    left: list[int] = []
    while time.monotonic() < deadline:
        left = [p for g in groups for p in _pids_in_group(g)] + _processes(HELPER.encode())
        if not left:
            return []
        time.sleep(0.2)
    for p in left:  # leave nothing behind, whatever the assertion says
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return left


EXITS = {signal.SIGTERM: 128 + signal.SIGTERM, signal.SIGINT: 130, signal.SIGKILL: -signal.SIGKILL}


@pytest.mark.slow  # ~43 s each: out of the default suite's 15 minutes (CI runs them)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL], ids=lambda s: s.name)
def test_a_signal_at_a_random_point_leaves_no_process_and_an_incomplete_run(tmp_path, sig):
    delay = random.Random(f"signals-{sig.name}").uniform(0.0, 15.0)  # into gates 1-3 of the smoke run
    proc = _start(tmp_path)
    groups = _until_targets_are_up(proc, tmp_path)
    time.sleep(delay)
    proc.send_signal(sig)
    code = proc.wait(timeout=120)
    stderr = (tmp_path / "stderr.txt").read_text()
    left = _left_after(groups, 15.0)  # the watchdog polls every 0.5 s; the engines exit on SIGTERM
    assert not left, f"left running after {sig.name} at +{delay:.1f} s: {left}"
    assert code == EXITS[sig], stderr
    assert "Traceback" not in stderr
    if sig is not signal.SIGKILL:
        assert stderr.strip().splitlines()[-1].startswith("gatekeeper: "), stderr
    (run_dir,) = (tmp_path / "out").iterdir()
    assert (run_dir / "incomplete.json").exists() and not (run_dir / "summary.json").exists()
    logs = {p.name: p.read_text() for p in run_dir.glob("*.log")}
    assert "starting with key" in logs["candidate.log"]
    assert KEY not in "".join(logs.values()), "a launch command's key reached its log unmasked"


def test_a_launch_that_fails_takes_the_helper_it_forked_with_it(tmp_path):
    """A launch command that forks a helper and then exits before the server is ready: the target
    did not start (HOLD), and its helper is not left running."""
    marker = "31338"
    config = tmp_path / "run.yaml"
    launch = f"sh -c 'sleep {marker} & echo failing on port $0; exit 1' {{port}}"
    config.write_text(f"reference: {{kind: launch, command: \"{launch}\"}}\ncandidate: {{kind: launch, command: \"{launch}\"}}\n")
    proc = subprocess.run([sys.executable, "-m", "gatekeeper.cli", "run", "-c", str(config), "--gates", "startup", "--out",
                           str(tmp_path / "out")], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "did not start" in proc.stderr and "exited with code 1" in proc.stderr
    left = _processes(marker.encode())
    for p in left:
        os.kill(p, signal.SIGKILL)
    assert not left, "the launch command's helper outlived its failed launch"
