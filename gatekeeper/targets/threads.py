"""CPU threads of the engines gatekeeper launches on one host: said before the run and after each launch.

A CPU engine (vLLM's CPU build, llama.cpp, PyTorch) spins one OpenMP or worker thread per core
unless told otherwise (`OMP_NUM_THREADS`, llama.cpp's `--n_threads`). A gatekeeper run keeps two
to four engines up at once (reference, candidate, a replica, performance copies), and on a small
host they starve each other: on 2 cores, 16 requests to each of three vLLM servers took 9-36 s
with the default threads and 4.2 s with `OMP_NUM_THREADS=1` (docs/vllm.md).

`planned` reads what a launch command sets where gatekeeper can see it (the command line, or the
environment gatekeeper passes on); `observed` reads what the started engine's processes actually
carry (/proc, Linux); `advice` turns either into one line a user can act on.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from gatekeeper.targets.interface import Target

_OMP = re.compile(r"\bOMP_NUM_THREADS=(\d+)")


@dataclass(frozen=True)
class ThreadUse:
    """A started engine's processes: how many, their OS threads, and the OMP_NUM_THREADS values
    they carry (None where a process has none)."""

    processes: int
    threads: int
    omp: tuple[int | None, ...]

    def describe(self) -> str:
        """e.g. "3 processes, 61 threads, OMP_NUM_THREADS=1"."""
        values = sorted({v for v in self.omp if v is not None})
        unset = sum(1 for v in self.omp if v is None)
        omp = ("OMP_NUM_THREADS=" + ",".join(map(str, values)) if values else "") + \
              (f"{', ' if values else ''}OMP_NUM_THREADS unset in {unset} of {self.processes}" if unset else "")
        return f"{self.processes} process{'es' if self.processes != 1 else ''}, {self.threads} threads, {omp}"


def planned(command: str | None, env: dict[str, str] | None = None) -> int | None:
    """The OMP_NUM_THREADS a launch command sets on its command line or in the target's `env`, else
    the one gatekeeper's environment passes on; None when none says (its launcher may still set it)."""
    m = _OMP.search(command or "")
    if m:
        return int(m.group(1))
    value = (env or {}).get("OMP_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS", "")
    return int(value) if value.isdigit() else None


def observed(process_group: int | None) -> ThreadUse | None:
    """What the processes of `process_group` carry, read from /proc; None where /proc cannot say."""
    if process_group is None or not Path("/proc").is_dir():
        return None
    omp: list[int | None] = []
    threads = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.getpgid(int(entry.name)) != process_group:
                continue
            environ = (entry / "environ").read_bytes().split(b"\0")
            status = (entry / "status").read_text()
        except (OSError, ProcessLookupError):
            continue
        value = next((e.split(b"=", 1)[1] for e in environ if e.startswith(b"OMP_NUM_THREADS=")), None)
        omp.append(int(value) if value and value.isdigit() else None)
        threads += next((int(line.split()[1]) for line in status.splitlines() if line.startswith("Threads:")), 0)
    return ThreadUse(len(omp), threads, tuple(omp)) if omp else None


def advice(engines: int, per_engine: list[int | None], cores: int | None = None) -> str | None:
    """One line when `engines` CPU engines launched at once may want more threads than the host has
    cores: `per_engine` holds each one's OMP_NUM_THREADS (None: not set where gatekeeper can see)."""
    cores = cores or os.cpu_count() or 1
    if engines < 2:
        return None
    wanted = sum(v if v is not None else cores for v in per_engine)
    if wanted <= cores:
        return None
    unset = sum(1 for v in per_engine if v is None)
    how = (f"{unset} of them with no OMP_NUM_THREADS in their command or environment (a CPU engine then spins one thread "
           "per core, unless a wrapper script sets it, as scripts/vllm_cpu.sh does: each launch's line says what its "
           "processes carry)" if unset else f"OMP_NUM_THREADS {', '.join(str(v) for v in per_engine)}")
    return (f"{engines} engines launched on this {cores}-core host at once, {how}: up to {wanted} busy threads on {cores} "
            f"cores, and engines that starve each other measure slow and time out; if they compute on the CPU, "
            f"set OMP_NUM_THREADS={max(1, cores // engines)} in each launch command's environment "
            f"(e.g. `env OMP_NUM_THREADS=1 …`; docs/vllm.md)")


def report(launched: Mapping[str, Target], say: Callable[[str], None]) -> None:
    """Say each launched engine's processes and threads as started, and warn when the engines
    launched at once may want more threads than the host has cores."""
    per_engine: list[int | None] = []
    for role, target in launched.items():
        use = observed(target.process_group())
        if use is not None:
            say(f"{role} engine: {use.describe()}")
        seen = [v for v in (use.omp if use else ()) if v is not None]
        per_engine.append(max(seen) if seen else None)  # the watchdog and a wrapper shell carry none
    line = advice(len(launched), per_engine)
    if line:
        say("warning: " + line)
