"""Waiting for a launched server to go quiet, against real processes: one that sleeps, one that
spins for a while after it "answered" (as vLLM's worker polls for a second), one that never stops."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gatekeeper.perf.cpu import CpuMeter
from gatekeeper.perf.quiet import MOST_S, QUIET_CORES, Wait, cores_used, wait_quiet
from server_util import stop

SPIN_THEN_SLEEP = """
import sys, time
end = time.perf_counter() + float(sys.argv[1])
while time.perf_counter() < end:
    pass
open(sys.argv[2], "w").close()
time.sleep(60)
"""


@contextmanager
def process(code: str, *args: str) -> Iterator[CpuMeter]:
    proc = subprocess.Popen([sys.executable, "-c", code, *args])
    try:
        yield CpuMeter.of_process(proc.pid)
    finally:
        stop(proc)


def test_no_meter_is_no_wait() -> None:
    assert wait_quiet([]) == Wait(0.0, True)


def test_a_sleeping_process_is_quiet() -> None:
    with process("import time; time.sleep(60)") as meter:
        wait = wait_quiet([meter])
    assert wait.quiet and wait.seconds < MOST_S


def test_a_process_still_spinning_after_its_answer_is_waited_for(tmp_path: Path) -> None:
    done = tmp_path / "spun"
    with process(SPIN_THEN_SLEEP, "1.0", str(done)) as meter:
        assert cores_used([meter], 0.1) >= QUIET_CORES  # it is spinning now
        wait = wait_quiet([meter])
        assert wait.quiet
        assert done.exists(), "the wait ended while the process still spun"


def test_a_process_that_never_goes_quiet_is_given_up_on() -> None:
    with process("while True: pass") as meter:
        wait = wait_quiet([meter], most_s=0.3)
    assert not wait.quiet
    assert wait.seconds >= 0.3
