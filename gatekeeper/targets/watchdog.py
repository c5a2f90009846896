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

The log is masked as it is written: COMMAND's stdout and stderr come to the wrapper through a
pipe, and each line goes to the wrapper's own stdout (the log file) through `Redactor.text`, with
the secret values gatekeeper hands over in `GATEKEEPER_WATCHDOG_SECRETS` (a JSON list, removed from
the environment COMMAND sees) besides the shapes every run masks. A run killed half-way leaves
no key in its logs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import IO

from gatekeeper.redact import Redactor

POLL_S = 0.5
GRACE_S = 10.0
SECRETS_ENV = "GATEKEEPER_WATCHDOG_SECRETS"


def _take_down(child: subprocess.Popen, pump: threading.Thread | None = None) -> None:
    """SIGTERM the process group (the wrapper ignores its own copy), SIGKILL it after GRACE_S
    (once the pump has copied the last lines the group printed)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        os.killpg(os.getpgrp(), signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        child.wait(timeout=GRACE_S)
    except subprocess.TimeoutExpired:
        pass
    if pump is not None:
        pump.join(timeout=1.0)
    sys.stdout.flush()
    try:
        os.killpg(os.getpgrp(), signal.SIGKILL)  # the wrapper included: nothing of the group outlives it
    except ProcessLookupError:
        pass


def _redactor() -> Redactor:
    """The secrets gatekeeper handed over (and out of the environment COMMAND inherits)."""
    raw = os.environ.pop(SECRETS_ENV, "")
    try:
        values = json.loads(raw) if raw else []
    except ValueError:
        values = []
    return Redactor([v for v in values if isinstance(v, str)] if isinstance(values, list) else [])


def _pump(source: IO[bytes], redactor: Redactor) -> None:
    """Copy COMMAND's output to the log line by line, masked; a line is written whole."""
    out = sys.stdout.buffer
    for raw in iter(source.readline, b""):
        out.write(redactor.text(raw.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape"))
        out.flush()


def main(argv: list[str]) -> int:
    """Run the command; returns its exit code (128 + signal when a signal ended it)."""
    if len(argv) < 3 or argv[1] != "--":
        print("usage: python -m gatekeeper.targets.watchdog PARENT_PID -- COMMAND [ARG...]", file=sys.stderr)
        return 2
    parent, command = int(argv[0]), argv[2:]
    redactor = _redactor()
    try:
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    except OSError as e:
        print(f"gatekeeper: cannot launch {command[0]}: {e}", file=sys.stderr, flush=True)
        return 127
    assert child.stdout is not None
    pump = threading.Thread(target=_pump, args=(child.stdout, redactor), daemon=True)
    pump.start()
    signal.signal(signal.SIGTERM, lambda signum, frame: _take_down(child, pump))
    while child.poll() is None:
        if os.getppid() != parent:  # gatekeeper is gone: the engine must not outlive it
            print("gatekeeper: the gatekeeper process that launched this target is gone; stopping it", file=sys.stderr,
                  flush=True)
            _take_down(child, pump)
            break
        time.sleep(POLL_S)
    code = child.wait()
    _end_helpers(pump)
    return 128 - code if code < 0 else code


def _end_helpers(pump: threading.Thread) -> None:
    """COMMAND has exited: what it started in the group (a helper a launch script forked) goes too,
    and the pump copies the last lines. A helper that ignores SIGTERM is SIGKILLed with the group."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        os.killpg(os.getpgrp(), signal.SIGTERM)
    except ProcessLookupError:
        pass
    pump.join(timeout=GRACE_S)
    if pump.is_alive():  # something still holds the pipe open
        sys.stdout.flush()
        os.killpg(os.getpgrp(), signal.SIGKILL)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
