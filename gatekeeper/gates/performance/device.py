"""Where the engine runs, for one question: can the server's CPU time FAIL the run?

CPU seconds per output token decide a CPU engine's decode cost without the wall clock's share of
a busy machine; for an engine on a GPU or NPU they are its host overhead (scheduling,
detokenizing, HTTP), which a faster kernel does not change and a slower one does not show. The
policy's `engine_device` declares it ("cpu", "accelerator"); "auto" observes it: an accelerator
engine holds its device file open (`perf/cpu.py`'s `accelerator_devices`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gatekeeper.perf.cpu import ACCELERATOR_DEVICES
from gatekeeper.perf.loadgen import LoadTarget


@dataclass(frozen=True)
class EngineDevice:
    """`on_cpu`: CPU time is the engine's decode cost (blocking once calibrated); `why`: declared
    or what was observed, for the run's notes."""

    on_cpu: bool
    why: str


def engine_device(declared: str, targets: Mapping[str, LoadTarget],
                  prefixes: tuple[str, ...] = ACCELERATOR_DEVICES) -> EngineDevice | None:
    """What the policy declares, or the accelerator devices (`prefixes`) the launched sides'
    processes hold open; None where CPU time is not measured (a side not launched here)."""
    meters = {side: t.cpu for side, t in targets.items()}
    if any(m is None for m in meters.values()):
        return None
    if declared != "auto":
        return EngineDevice(declared == "cpu", f"declared in the policy (engine_device: {declared})")
    held = {side: m.devices(prefixes) for side, m in meters.items() if m is not None}
    found = {side: devs for side, devs in held.items() if devs}
    if not found:
        return EngineDevice(True, "observed: no accelerator device open on either side")
    shown = "; ".join(f"the {side} holds {', '.join(devs[:3])} open" for side, devs in sorted(found.items()))
    return EngineDevice(False, f"observed: {shown}")
