"""CPU time per output token and the calibrated launch-to-launch spread τ.

The CPU meter reads real processes (a busy one and a sleeping one in their own process group);
the τ bound is checked for its stated coverage by simulation; calibration lines live in the
performance history beside runs without entering the trends; the gate picks a figure's τ from
the calibrations of this machine or says it assumed the policy's; and `gatekeeper perf
calibrate` launches the bundled build twice and stores one A/A pair with its CPU figure.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from gatekeeper.gates.performance.gate import judge
from gatekeeper.perf.measure import LevelBlocks
from gatekeeper.gates.performance.settings import PerformanceSettings
from gatekeeper.gates.performance.spread import calibrated_spreads
from gatekeeper.perf.calibration import MIN_PAIRS, aa_figures, machine_class, machine_load, spreads
from gatekeeper.perf.cpu import CpuMeter
from gatekeeper.perf.history import HistoryEntry, append_entry, load_history

def gk(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """The gatekeeper CLI in a subprocess."""
    return subprocess.run([sys.executable, "-m", "gatekeeper.cli", *args], capture_output=True, text=True, timeout=timeout)


BUSY = "import time\nend = time.process_time() + 0.6\nwhile time.process_time() < end: pass\ntime.sleep(30)\n"


def _group(code: str) -> subprocess.Popen:
    """A shell leading its own process group (as the watchdog leads a launch) with one python child."""
    return subprocess.Popen(["sh", "-c", f'{sys.executable} -c "$0" & wait', code], start_new_session=True)


def test_cpu_meter_counts_the_groups_work_and_not_its_sleep():
    busy, idle = _group(BUSY), _group("import time\ntime.sleep(30)\n")
    try:
        time.sleep(0.3)  # both children started
        meters = {"busy": CpuMeter.of_group(busy.pid), "idle": CpuMeter.of_group(idle.pid)}
        assert all(m is not None for m in meters.values())
        before = {k: m.seconds() for k, m in meters.items() if m}
        time.sleep(1.5)
        used = {k: m.seconds() - before[k] for k, m in meters.items() if m}
        assert used["busy"] > 0.2, used  # the child's spin (whatever of its 0.6 s fell after the first reading)
        assert used["idle"] < 0.05, used
        assert meters["busy"] and busy.pid not in meters["busy"].pids  # the group's leader (the watchdog) is left out
    finally:
        for p in (busy, idle):
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def test_no_meter_without_a_group():
    assert CpuMeter.of_group(None) is None


def _calibration(machine: str, rng: random.Random, tau: float, v: float, n: int, load: float | None = None,
                 at: str = "2026-12-02T20:00:00+00:00") -> list[HistoryEntry]:
    out = []
    for k in range(n):
        r = rng.gauss(0, math.sqrt(2 * tau * tau + v))
        out.append(HistoryEntry(run_id=f"cal-{k}", finished_at=at, label="b", baseline="b", metrics={}, kind="calibration", machine=machine,
                                aa={"c1.cpu_s_per_token": (r, v)}, load=load))
    return out


def test_the_tau_bound_covers_the_true_spread_as_often_as_it_says():
    """r ~ N(0, 2τ² + v) per A/A pair; the gate's τ is the one-sided 90% upper bound. Over 2,000
    simulated calibrations of 10 pairs (τ 1%, v from 24 block pairs of sd 4%) it is at least the
    true τ in about 90% of them; the point estimate alone would be below it about half the time."""
    rng, tau, v = random.Random(3), 0.01, 0.04 ** 2 / 24
    covered = below = 0
    for _ in range(2000):
        sp = spreads(_calibration("m", rng, tau, v, MIN_PAIRS), "m")["c1.cpu_s_per_token"]
        assert sp.bound is not None and sp.estimate is not None
        covered += sp.bound >= tau
        below += sp.estimate < tau
    assert 0.86 <= covered / 2000 <= 0.95, covered
    assert below / 2000 > 0.35, below


def test_too_few_pairs_or_another_machine_give_no_tau():
    rng = random.Random(1)
    few = spreads(_calibration("m", rng, 0.01, 1e-4, MIN_PAIRS - 1), "m")["c1.cpu_s_per_token"]
    assert few.bound is None and not few.calibrated and few.pairs == MIN_PAIRS - 1
    assert spreads(_calibration("other", rng, 0.01, 1e-4, MIN_PAIRS), "m") == {}


def test_aa_figures_are_the_mean_log_ratio_and_its_variance():
    got = aa_figures({"x": [1.0, 2.0, 4.0, None]}, {"x": [1.1, 2.2, 4.4, 5.0], "y": [1.0]})
    mean, var = got["x"]
    assert mean == pytest.approx(math.log(1.1)) and var == pytest.approx(0.0, abs=1e-15)
    assert "y" not in got and aa_figures({"x": [1.0, 2.0]}, {"x": [1.0, 2.0]}) == {}  # fewer than 3 pairs


def test_calibration_lines_share_the_history_without_entering_its_trends(tmp_path):
    path = tmp_path / "h.jsonl"
    append_entry(path, HistoryEntry(run_id="r1", finished_at="2026-12-02T20:00:00+00:00", label="a", baseline="b",
                                    metrics={"c1.tpot_p50_s": 0.02}))
    append_entry(path, _calibration(machine_class(), random.Random(0), 0.01, 1e-4, 1)[0])
    append_entry(path, HistoryEntry(run_id="r2", finished_at="2026-12-02T20:01:00+00:00", label="a", baseline="b",
                                    metrics={"c1.tpot_p50_s": 0.021}))
    assert [e.run_id for e in load_history(path)] == ["r1", "r2"]
    (cal,) = load_history(path, kind="calibration")
    assert cal.machine == machine_class() and set(cal.aa) == {"c1.cpu_s_per_token"}
    assert json.loads(path.read_text().splitlines()[1])["kind"] == "calibration"
    out = gk("perf", "history", str(path), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["num_runs"] == 2


def test_the_gate_uses_this_machines_calibration_and_says_what_it_assumed(tmp_path):
    s = PerformanceSettings(levels=[1])
    path = tmp_path / "h.jsonl"
    taus, note = calibrated_spreads(path, s)
    assert taus == {} and f"τ = {s.launch_spread:.1%} assumed" in note and f"0 of the {MIN_PAIRS}" in note
    for e in _calibration(machine_class(), random.Random(5), 0.005, 1e-5, MIN_PAIRS):
        append_entry(path, e)
    taus, note = calibrated_spreads(path, s)
    assert set(taus) == {"c1.cpu_s_per_token"} and 0 < taus["c1.cpu_s_per_token"] < 0.05
    assert "τ calibrated on this machine" in note and "assumed (the policy's launch_spread) for c1.output_tokens_per_s" in note


def test_a_calibration_counts_only_under_its_own_load_and_shows_its_age(tmp_path):
    """Pairs measured on a quiet machine do not set τ for a busy one (and back); the note names the
    load now and the newest pair's age."""
    s = PerformanceSettings(levels=[1])
    path = tmp_path / "h.jsonl"
    now = dt.datetime.now(dt.timezone.utc)
    for e in _calibration(machine_class(), random.Random(6), 0.005, 1e-5, MIN_PAIRS, load=0.05,
                          at=(now - dt.timedelta(hours=3)).isoformat(timespec="seconds")):
        append_entry(path, e)
    taus, note = calibrated_spreads(path, s, 0.10)
    assert set(taus) == {"c1.cpu_s_per_token"}
    assert "while quiet (10% of its cores busy" in note and "the newest 3.0 h old" in note, note
    taus, note = calibrated_spreads(path, s, 0.60)  # one core of two burnt by someone else
    assert taus == {} and "while busy (60% of its cores busy" in note, note
    assert f"its {MIN_PAIRS} pairs measured while quiet do not count" in note, note
    (line,) = {json.loads(x)["load"] for x in path.read_text().splitlines()}
    assert line == 0.05  # stored with each pair


def test_the_machine_load_sees_a_process_that_burns_a_core():
    idle = machine_load(0.5)
    assert idle is not None and 0.0 <= idle <= 1.0
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        load = machine_load(1.0)
    finally:
        burner.kill()
        burner.wait()
    assert load is not None and load >= 0.9 / (os.cpu_count() or 1), load


def _blocks(cpu: bool) -> LevelBlocks:
    rng = random.Random(2)
    lv = LevelBlocks(1)
    for _ in range(12):
        for side in ("baseline", "candidate"):
            x = math.exp(rng.gauss(0, 0.03))
            lv.figures[side].append({"output_tokens_per_s": 100 / x, "tpot_p50_s": 0.01 * x, "ttft_p95_s": 0.02 * x,
                                     "cpu_s_per_token": 0.005 * x if cpu else None})
    return lv


def test_judge_compares_cpu_time_only_where_it_was_measured_with_its_own_tau():
    s = PerformanceSettings(levels=[1])
    assert "cpu_s_per_token" not in {c.metric for c, _ in judge([_blocks(False)], s, 2)}
    assumed = {c.metric: c for c, _ in judge([_blocks(True)], s, 2)}
    calibrated = {c.metric: c for c, _ in judge([_blocks(True)], s, 2, {"c1.cpu_s_per_token": 0.002})}
    assert assumed["cpu_s_per_token"].spread == s.launch_spread and calibrated["cpu_s_per_token"].spread == 0.002
    width = {k: c["cpu_s_per_token"].ci[1] - c["cpu_s_per_token"].ci[0] for k, c in (("a", assumed), ("c", calibrated))}
    assert width["c"] < width["a"] / 2, width  # τ 2.5% assumed dominates 12 pairs of 3% noise
    assert calibrated["tpot_p50_s"].spread == s.launch_spread


@pytest.mark.slow  # ~15 s: out of the default suite's 15 minutes (CI runs it)
def test_perf_calibrate_launches_the_build_twice_and_stores_the_pair(tmp_path):
    policy = tmp_path / "policy.yaml"
    policy.write_text("version: 1\nname: calibrate-test\ngates:\n  performance:\n    levels: [1]\n    pairs: 4\n"
                      "    block_requests: 2\n    warmup_requests: 1\n    output_tokens: [8, 8]\n"
                      f"    history: {tmp_path / 'h.jsonl'}\n")
    out = gk("perf", "calibrate", "--pairs", "1", "--policy", str(policy))
    assert out.returncode == 0, out.stderr[-2000:]
    (cal,) = load_history(tmp_path / "h.jsonl", kind="calibration")
    assert cal.machine == machine_class() and cal.label.startswith("bundled:optimized")
    assert {"c1.cpu_s_per_token", "c1.tpot_p50_s"} <= set(cal.aa)  # CPU read from the launched processes' group
    assert f"not used yet (1 of {MIN_PAIRS} pairs)" in out.stdout
    assert load_history(tmp_path / "h.jsonl") == []  # no run line
