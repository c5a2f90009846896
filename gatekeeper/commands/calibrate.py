"""`gatekeeper perf calibrate`: A/A launch pairs of one build, measured as the gate measures, stored
in the performance history so the gate can put this machine's τ in its standard errors.

Each pair starts the build twice (fresh processes, as the gate launches its sides), warms both up,
measures them with the gate's own counterbalanced blocks at the policy's levels and pairs, stops
them, and appends one calibration line (`perf/calibration.py`): per judged figure and level the
mean log ratio of the second launch over the first and its variance. The estimate that comes out
is printed after every pair.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

from gatekeeper.endpoints.client import Endpoint
from gatekeeper.errors import ConfigError, EndpointError
from gatekeeper.perf.measure import LevelBlocks, measure_level, warm_up
from gatekeeper.gates.performance.settings import PerformanceSettings
from gatekeeper.perf.workload_choice import configured_workload, controlled_workload
from gatekeeper.perf.calibration import Spread, aa_figures, load_class, machine_class, machine_load, spread_of, spreads
from gatekeeper.perf.cpu import CpuMeter
from gatekeeper.perf.history import HistoryEntry, append_entry, history_path, load_history
from gatekeeper.perf.loadgen import LoadTarget
from gatekeeper.run_plan import RunPlan
from gatekeeper.targets.served import served_model
from gatekeeper.targets.interface import Target, TargetSpec
from gatekeeper.targets.spec import make_target


def calibration_target(plan: RunPlan) -> TargetSpec:
    """The build to calibrate: the run's candidate, which must be one gatekeeper launches."""
    spec = plan.candidate
    if spec.kind == "url":
        raise ConfigError("a URL target cannot be launched twice: calibration needs two launches of one build "
                          "(give --candidate as bundled[:profile] or a launch command in the run config)", key="--candidate")
    return spec


def calibrate(plan: RunPlan, pairs: int, run_dir: Path, progress: Callable[[str], None]) -> tuple[Path, dict[str, Spread]]:
    """Measure `pairs` A/A launch pairs of the candidate's build and append each to the history;
    returns the history's path and the spreads it now gives this machine."""
    s: PerformanceSettings = plan.policy.settings("performance")
    spec = calibration_target(plan)
    path = history_path(s.history, plan.out_dir)
    machine = machine_class()
    load_history(path, kind="calibration")  # a broken history fails now, not after the first pair
    progress(f"calibrating {spec.describe()} on {machine}: {pairs} A/A launch pairs, appended to {path}")
    load: float | None = None
    for k in range(pairs):
        load = machine_load()  # before this pair launches: what else keeps the machine busy
        levels = _measure_pair(plan, s, spec, run_dir, k, progress)
        baseline = {f"c{lv.level}.{m}": lv.series("baseline", m) for lv in levels for m in s.figures(lv.level)}
        again = {f"c{lv.level}.{m}": lv.series("candidate", m) for lv in levels for m in s.figures(lv.level)}
        entry = HistoryEntry(run_id=f"calibration-{plan.run_id}-{k + 1}",
                             finished_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), label=spec.describe(),
                             baseline=spec.describe(), metrics={}, kind="calibration", machine=machine, aa=aa_figures(baseline, again),
                             load=load)
        append_entry(path, entry)
        found = spreads(load_history(path, kind="calibration"), machine, load_class(load))
        shown = ", ".join(f"{f} {spread_of(abs(r)):.2%}" for f, (r, _) in entry.aa.items())
        progress(f"pair {k + 1}/{pairs} (machine {load_class(load)}"
                 + ("" if load is None else f", {load:.0%} of its cores busy before it launched") + f"): A′ vs A {shown}; " + ", ".join(
            f"{f} τ≈{spread_of(sp.estimate):.2%} ({sp.pairs} pairs)" for f, sp in found.items() if sp.estimate is not None))
    return path, spreads(load_history(path, kind="calibration"), machine, load_class(load))


def _measure_pair(plan: RunPlan, s: PerformanceSettings, spec: TargetSpec, run_dir: Path, k: int,
                  progress: Callable[[str], None]) -> list[LevelBlocks]:
    """One A/A pair: two fresh launches measured as the gate's baseline and candidate."""
    started: list[Target] = []
    endpoints: list[Endpoint] = []
    try:
        for role in ("first", "second"):
            target = make_target(f"calibration-{role}", spec)
            started.append(target)
            st = target.start(str(run_dir))
            if not st.ready:
                raise EndpointError("connect", st.base_url or role, f"launch {k + 1} ({role}) did not start: {st.error}")
            endpoints.append(Endpoint(role, st.base_url, served_model(st.base_url, spec, target.api_key()),
                                      target.api_key(), plan.timeout_s))
        meters = [CpuMeter.of_group(t.process_group()) for t in started]
        if None in meters:
            meters = [None, None]
        targets = {side: LoadTarget(ep.base_url, ep.model, target.api_key(), plan.timeout_s, meter)
                   for side, ep, target, meter in zip(("baseline", "candidate"), endpoints, started, meters)}
        notes: list[str] = []
        workload = controlled_workload(configured_workload(s.source, s.traffic, s.workload(), endpoints[0]), targets, plan.seed, notes)
        for note in notes:
            progress(note)
        warm = warm_up(targets, workload.requests(s.warmup_requests, plan.seed + 1))
        if warm.settle:
            progress(f"calibrate: {warm.why()}")
        levels = []
        for level in s.measured_levels():  # the primary figure's level too
            levels.append(measure_level(targets, level, s.pairs_at(level), s.requests_per_block(level), workload,
                                        plan.seed + k, s.slo(), progress, settle=warm.settle))
        return levels
    finally:
        for ep in endpoints:
            ep.close()
        for target in started:
            target.stop()
