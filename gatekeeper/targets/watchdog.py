"""Runs a launched target's command and takes it down with gatekeeper, however gatekeeper ends.

    python -m gatekeeper.targets.watchdog PARENT_PID -- COMMAND [ARG...]

`ProcessTarget` starts every engine through this wrapper, in a process group of its own. The
wrapper starts COMMAND in that group (it inherits the log file, cwd and environment), exits with
COMMAND's exit code, and watches its parent: when gatekeeper is gone — SIGKILL, an OOM kill, a CI
runner cancelling the job — the parent pid changes, and the wrapper sends SIGTERM to the whole
group (the engine and whatever it started: vLLM's engine core and workers), then SIGKILL to what
is left after `GRACE_S`. A SIGTERM to the wrapper itself (gatekeeper's own `stop`, which signals
the group) is passed on the same way. A parent-death signal (prctl) would not do: it fires when
the *thread* that forked exits, and gatekeeper launches targets from worker threads.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

POLL_S = 0.5
GRACE_S = 10.0


def _take_down(child: subprocess.Popen) -> None:
    """SIGTERM the process group (the wrapper ignores its own copy), SIGKILL it after GRACE_S."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        os.killpg(os.getpgrp(), signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        child.wait(timeout=GRACE_S)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(os.getpgrp(), signal.SIGKILL)  # the wrapper included: nothing of the group outlives it
    except ProcessLookupError:
        pass


def main(argv: list[str]) -> int:
    """Run the command; returns its exit code (128 + signal when a signal ended it)."""
    if len(argv) < 3 or argv[1] != "--":
        print("usage: python -m gatekeeper.targets.watchdog PARENT_PID -- COMMAND [ARG...]", file=sys.stderr)
        return 2
    parent, command = int(argv[0]), argv[2:]
    try:
        child = subprocess.Popen(command)
    except OSError as e:
        print(f"gatekeeper: cannot launch {command[0]}: {e}", file=sys.stderr, flush=True)
        return 127
    signal.signal(signal.SIGTERM, lambda signum, frame: _take_down(child))
    while child.poll() is None:
        if os.getppid() != parent:  # gatekeeper is gone: the engine must not outlive it
            print("gatekeeper: the gatekeeper process that launched this target is gone; stopping it", file=sys.stderr,
                  flush=True)
            _take_down(child)
            break
        time.sleep(POLL_S)
    code = child.wait()
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
