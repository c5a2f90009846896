"""The thread advice for engines gatekeeper launches at once on one host (targets/threads.py), and
what a started process really carries, read from /proc of a real child process."""

from __future__ import annotations

import os
import subprocess
import sys

from gatekeeper.targets import threads


def test_two_engines_with_unknown_threads_on_two_cores_get_advice():
    line = threads.advice(2, [None, None], cores=2)
    assert line is not None and "set OMP_NUM_THREADS=1" in line and "up to 4 busy threads on 2 cores" in line


def test_engines_that_fit_the_cores_get_none():
    assert threads.advice(2, [1, 1], cores=2) is None
    assert threads.advice(1, [None], cores=2) is None


def test_the_command_line_and_the_target_env_are_read():
    assert threads.planned("env OMP_NUM_THREADS=1 python -m x --port {port}") == 1
    assert threads.planned("python -m x", {"OMP_NUM_THREADS": "2"}) == 2


def test_a_started_process_group_is_read_from_proc():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True,
                            env={**os.environ, "OMP_NUM_THREADS": "3"})
    try:
        use = threads.observed(proc.pid)
    finally:
        proc.kill()
        proc.wait()
    assert use is not None and use.processes == 1 and use.omp == (3,) and use.threads >= 1
    assert "OMP_NUM_THREADS=3" in use.describe()
