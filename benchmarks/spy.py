"""Where a running process spends its CPU: py-spy (a sampling profiler, `pip install py-spy`)
attached to it and its child processes while a benchmark loads it, and the samples summed up.

    spy = Spy.attach(pid, out)   # starts sampling (None when py-spy is not installed)
    ...                          # the load
    spy.stop()                   # writes `out` (py-spy's raw collapsed stacks)
    print(summary([out]))        # per process: samples, and where the time went

The summary counts samples (py-spy samples running, not idle, threads: CPU time, not waiting),
per process (the replica, its mirror child), by innermost frame (self time), and by area (the
innermost frame that names one: `AREAS`). py-spy counts a thread that Python sees running, so
a thread blocked in a lock taken from Python shows as "thread handoffs". Sampling costs the profiled
process a little (`--nonblocking`: it is never paused).
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

RATE = 250  # samples per second
AREAS = (  # the first area a stack's frames name, innermost first
    ("JSON", re.compile(r"json/|orjson|ujson")),
    ("pair store (sqlite3, psycopg)", re.compile(r"sqlite3|psycopg|traffic/store/")),
    ("HTTP server and client (aiohttp)", re.compile(r"aiohttp/|multidict|yarl/")),
    ("HTTP client (httpx, httpcore)", re.compile(r"httpx/|httpcore/|h11/")),
    ("thread handoffs (locks, queues, futures, pipes)",
     re.compile(r"threading\.py|synchronize\.py|concurrent/futures|queue\.py|multiprocessing/(connection|queues)")),
    ("event loop, sockets", re.compile(r"asyncio/|uvloop|selectors|socket\.py|ssl\.py")),
    ("gatekeeper", re.compile(r"gatekeeper/")),
)
PROCESS = re.compile(r'(process \d+):"[^"]*"')  # py-spy's process frame: its id and its quoted command line
FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")


@dataclass
class Spy:
    """py-spy recording one process tree to a raw file."""

    popen: subprocess.Popen
    out: Path

    @classmethod
    def attach(cls, pid: int, out: Path) -> Spy | None:
        """Start sampling `pid` and its children; None when py-spy is not on the PATH."""
        binary = shutil.which("py-spy")
        if binary is None:
            return None
        popen = subprocess.Popen([binary, "record", "--pid", str(pid), "--subprocesses", "--nonblocking",
                                  "--rate", str(RATE), "--format", "raw", "--output", str(out)],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        return cls(popen, out)

    def stop(self) -> None:
        """Stop sampling (SIGINT: py-spy writes its file), wait for the file, and keep only each
        process' id in it (py-spy names a process by its command line, which holds the store's URL
        and its password)."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGINT)
        try:
            self.popen.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()
        if self.out.is_file():
            self.out.write_text(PROCESS.sub(r"\1", self.out.read_text(errors="replace")))


def _frames(stack: str) -> list[str]:
    return [f for f in stack.split(";") if f]


def _where(frame: str) -> tuple[str, str]:
    """(function, short file) of a py-spy frame `func (path/file.py:line)`."""
    m = FRAME.match(frame)
    if m is None:
        return frame, ""
    path = m["file"]
    for marker in ("site-packages/", "lib/python3.11/", "/work/main/", "gatekeeper/"):
        if marker in path:
            path = path.split(marker, 1)[1] if marker != "gatekeeper/" else "gatekeeper/" + path.split(marker, 1)[1]
            break
    return m["func"], path


def summary(files: list[Path], top: int = 12) -> str:
    """A text table per process of the raw files: samples, share by area, the innermost frames."""
    per: dict[str, tuple[Counter, Counter]] = {}
    for file in files:
        if not file.is_file():
            continue
        for line in file.read_text(errors="replace").splitlines():
            stack, _, count = line.rpartition(" ")
            if not stack or not count.isdigit():
                continue
            frames = _frames(stack)
            depth = sum(f.startswith("process ") for f in frames)  # py-spy roots a child's stacks under its parent's
            process = "replica (proxy)" if depth <= 1 else "its mirror process"
            code = [f for f in frames if not f.startswith(("process ", "thread "))]
            areas, leaves = per.setdefault(process, (Counter(), Counter()))
            area = next((name for f in reversed(code) for name, rx in AREAS if rx.search(f)), "other (interpreter, stdlib)")
            areas[area] += int(count)
            if code:
                func, path = _where(code[-1])
                leaves[f"{func} ({path})"] += int(count)
    lines = []
    for process, (areas, leaves) in sorted(per.items()):
        total = sum(areas.values()) or 1
        lines.append(f"{process}: {total} samples at {RATE}/s = {total / RATE:.1f} CPU s")
        lines += [f"  {n / total:6.1%}  {name}" for name, n in areas.most_common()]
        lines.append("  innermost frames:")
        lines += [f"  {n / total:6.1%}  {name}" for name, n in leaves.most_common(top)]
    return "\n".join(lines) if lines else "no samples (py-spy needs ptrace: run as root or with CAP_SYS_PTRACE)"
