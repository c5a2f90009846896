"""CPU time decides only for an engine on the CPU: declared in the policy, or observed from the
device files the launched processes hold open (`gates/performance/device.py`, `perf/cpu.py`)."""

from __future__ import annotations

import math
import os
import random
import subprocess
import sys
from pathlib import Path

from gatekeeper.gates.performance.device import engine_device
from gatekeeper.gates.performance.gate import judge
from gatekeeper.perf.measure import LevelBlocks
from gatekeeper.gates.performance.settings import PerformanceSettings
from gatekeeper.perf.cpu import CpuMeter, accelerator_devices
from gatekeeper.perf.loadgen import LoadTarget


def _holder(path: Path) -> subprocess.Popen:
    """A real process that holds `path` open (as a GPU engine holds /dev/nvidia0) until killed."""
    proc = subprocess.Popen([sys.executable, "-c", f"import sys, time; f = open({str(path)!r}, 'rb'); "
                             "print('open', flush=True); time.sleep(120)"], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "open"
    return proc


def test_the_devices_a_process_holds_open_are_seen(tmp_path: Path):
    device = tmp_path / "accel0"
    device.write_bytes(b"")
    proc = _holder(device)
    try:
        assert accelerator_devices([proc.pid], (str(tmp_path),)) == [str(device)]
        assert CpuMeter.of_process(proc.pid).devices((str(tmp_path / "other"),)) == []
    finally:
        proc.kill()
        proc.wait()
    assert accelerator_devices([proc.pid], (str(tmp_path),)) == []  # exited: nothing, no error


def test_auto_observes_the_device_and_a_declaration_overrides_it(tmp_path: Path):
    device = tmp_path / "nvidia0"
    device.write_bytes(b"")
    gpu = _holder(device)
    plain = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        def targets(cand: int) -> dict[str, LoadTarget]:
            return {"baseline": LoadTarget("http://b", "m", cpu=CpuMeter.of_process(plain.pid)),
                    "candidate": LoadTarget("http://c", "m", cpu=CpuMeter.of_process(cand))}

        prefixes = (str(device),)
        seen = engine_device("auto", targets(gpu.pid), prefixes)
        assert seen is not None and not seen.on_cpu and f"the candidate holds {device} open" in seen.why
        cpu = engine_device("auto", targets(plain.pid), prefixes)
        assert cpu is not None and cpu.on_cpu and "no accelerator device" in cpu.why
        declared = engine_device("cpu", targets(gpu.pid), prefixes)
        assert declared is not None and declared.on_cpu and "declared" in declared.why
        assert engine_device("accelerator", targets(plain.pid), prefixes).on_cpu is False  # type: ignore[union-attr]
        unmetered = {"baseline": LoadTarget("http://b", "m"), "candidate": LoadTarget("http://c", "m")}
        assert engine_device("auto", unmetered, prefixes) is None  # CPU time not measured: nothing to decide
    finally:
        for p in (gpu, plain):
            p.kill()
            p.wait()


def test_this_machine_runs_no_accelerator_engine():
    """The test process holds no GPU device: a bundled engine here is observed as a CPU engine."""
    assert accelerator_devices([os.getpid()]) == []


def _cpu_level(rng: random.Random, slower: float) -> LevelBlocks:
    """Blocks whose candidate costs `slower` more CPU per token, wall clock unchanged."""
    lv = LevelBlocks(1)
    for _ in range(24):
        for side in ("baseline", "candidate"):
            noise = math.exp(rng.gauss(0, 0.01))
            lv.figures[side].append({"output_tokens_per_s": 300.0 * noise, "tpot_p50_s": 0.003 * noise,
                                     "cpu_s_per_token": 0.003 * noise * (1 + slower if side == "candidate" else 1.0)})
    return lv


def test_cpu_time_of_an_accelerator_engine_is_advisory():
    s = PerformanceSettings(levels=[1], pairs=24)
    calibrated = {"c1.cpu_s_per_token": 0.005}
    lv = _cpu_level(random.Random(4), 0.20)
    family = {c.metric: c.family for c, _ in judge([lv], s, 1, calibrated)}
    assert family["cpu_s_per_token"] == "guardrail"  # a CPU engine, calibrated: CPU time blocks
    host = {c.metric: c.family for c, _ in judge([lv], s, 1, calibrated, host_only=True)}
    assert host["cpu_s_per_token"] == "host-overhead"
    assert host["tpot_p50_s"] == "guardrail"  # wall clock still blocks


def _at(level: int, lv: LevelBlocks) -> LevelBlocks:
    """The same blocks, measured at `level`."""
    return LevelBlocks(level, lv.figures)


def test_cpu_time_is_held_to_its_budget_at_concurrency_1_and_to_the_guardrails_above():
    """A calibrated CPU engine 10% costlier per token: beyond `cpu_budget` (5%) at concurrency 1, a
    FAIL; within `cpu_budget_concurrent` (15%) at concurrency 8, where two launches of 12 pairs
    cannot decide 5%, no FAIL."""
    s = PerformanceSettings(levels=[1, 8], pairs=24)
    calibrated = {"c1.cpu_s_per_token": 0.005, "c8.cpu_s_per_token": 0.005}
    lv = _cpu_level(random.Random(5), 0.10)
    judged = {c.level: c for c, _ in judge([lv, _at(8, lv)], s, 1, calibrated) if c.metric == "cpu_s_per_token"}
    assert judged["c1"].limit == 0.05 and judged["c8"].limit == 0.15
    assert judged["c1"].material() and not judged["c8"].material()
