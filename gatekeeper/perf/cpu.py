"""A launched server's CPU time, read from /proc: the decode measure contention does not inflate.

Wall-clock figures on a shared machine carry every other process's load: the run queue, steal,
a neighbour's burst. The CPU time the server's own threads spent on a core does not (to first
order: cache and memory-bandwidth contention still slow the work a little). It is read from
`/proc/<pid>/task/<tid>/schedstat` — the scheduler's nanosecond on-CPU time per thread — summed
over every thread of every process in the target's process group (the group gatekeeper's
watchdog starts each launch in), the watchdog itself left out. utime/stime in `/proc/<pid>/stat`
are sampled at the clock tick (10 ms here): a 4-request block of ~0.5 s CPU would carry ±2%
quantisation noise from them alone.

What it is blind to — stated wherever a report shows it:
- regressions that *wait* rather than compute (a sleep, a lock, I/O, a slower network path);
- GPU kernel time (for a GPU engine it measures host overhead only);
- work of threads that ended within the block (their counts leave with them) and of processes
  outside the group (a server that daemonises into its own session).

Only for targets gatekeeper launched on this machine (Linux); None elsewhere.

Whether an engine runs on an accelerator is observed the same way: a GPU or NPU engine holds its
device's file open (`/dev/nvidia*` for CUDA, `/dev/kfd` and `/dev/dri/renderD*` for ROCm,
`/dev/accel/*` for the kernel's accel class, `/dev/neuron*` for AWS Neuron) — `accelerator_devices`.
"""

from __future__ import annotations

import os
from pathlib import Path

PROC = Path("/proc")
ACCELERATOR_DEVICES = ("/dev/nvidia", "/dev/kfd", "/dev/dri/renderD", "/dev/accel/", "/dev/neuron")


def _group_members(pgid: int) -> list[int]:
    """Pids whose process group is `pgid` (the group leader excluded: the watchdog)."""
    out = []
    for entry in os.scandir(PROC):
        if not entry.name.isdigit() or int(entry.name) == pgid:
            continue
        try:
            fields = (PROC / entry.name / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # exited while we looked
            continue
        if int(fields[2]) == pgid:
            out.append(int(entry.name))
    return out


def process_cpu_ns(pid: int) -> int:
    """On-CPU nanoseconds of every live thread of `pid` (0 if it exited)."""
    total = 0
    try:
        tasks = list(os.scandir(PROC / str(pid) / "task"))
    except OSError:
        return 0
    for task in tasks:
        try:
            total += int((Path(task.path) / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return total


def accelerator_devices(pids: list[int], prefixes: tuple[str, ...] = ACCELERATOR_DEVICES) -> list[str]:
    """The accelerator device files (paths starting with one of `prefixes`) the processes `pids`
    hold open, sorted, each once; [] for a CPU engine (or processes that exited)."""
    found: set[str] = set()
    for pid in pids:
        try:
            fds = list(os.scandir(PROC / str(pid) / "fd"))
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(fd.path)
            except OSError:
                continue
            if target.startswith(prefixes):
                found.add(target)
    return sorted(found)


class CpuMeter:
    """The CPU seconds a launched target's processes have used so far. Members of the group are
    found once at construction and again when asked (`refresh`), not on every reading: a
    reading is then one small file per thread."""

    def __init__(self, pgid: int | None, pids: list[int] | None = None):
        self.pgid = pgid
        self.pids = _group_members(pgid) if pgid is not None else list(pids or [])

    def refresh(self) -> None:
        """Find the group's processes again (after a server forked workers)."""
        if self.pgid is not None:
            self.pids = _group_members(self.pgid)

    def devices(self, prefixes: tuple[str, ...] = ACCELERATOR_DEVICES) -> list[str]:
        """The accelerator devices the group's processes hold open (`accelerator_devices`)."""
        return accelerator_devices(self.pids, prefixes)

    def seconds(self) -> float:
        """CPU seconds used so far by the group's live threads."""
        return sum(process_cpu_ns(pid) for pid in self.pids) / 1e9

    @classmethod
    def of_group(cls, pgid: int | None) -> CpuMeter | None:
        """A meter for process group `pgid`, or None where there is none to read (no group, not
        Linux, no schedstat, or nothing in the group)."""
        if pgid is None or not (PROC / "self" / "schedstat").exists():
            return None
        meter = cls(pgid)
        return meter if meter.pids else None

    @classmethod
    def of_process(cls, pid: int) -> CpuMeter:
        """A meter for one process (all its threads), e.g. a server a benchmark started itself."""
        return cls(None, [pid])
