"""What `gatekeeper run --dry-run` warns a user gating real servers about: an undeclared dtype, a
URL target with no key variable named or answering 401/403 (`plan_probe.py` asks each URL target
for its models), a missing log file, and the load the run puts on a URL reference (often a
production server): requests, peak concurrency, and a duration estimate scaled by one short
answer's measured speed."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gatekeeper.config.run_config import find_file
from gatekeeper.gates.registry import select
from gatekeeper.run.plan_probe import Speed, probe
from gatekeeper.run_plan import RunPlan
from gatekeeper.targets import threads

DEFAULT_ANSWER_TOKENS = 256  # a recorded request without max_tokens: assumed this long for the estimate


@dataclass(frozen=True)
class PlanWarnings:
    """The dry run's warnings, in the order printed, and among them the lines naming a URL target
    no run could use (unreachable, or refusing its key): those make the dry run exit 3."""

    lines: tuple[str, ...]
    unusable: tuple[str, ...]


def plan_warnings(plan: RunPlan) -> PlanWarnings:
    """What a user gating real servers should know before the run: an undeclared dtype (the
    tolerances assume float32), a URL target with no key variable named or refusing the request,
    a URL log file that is not there, and the load the run puts on a URL reference."""
    found: list[str] = []
    unusable: list[str] = []
    speed = None
    for role, spec in (("reference", plan.reference), ("candidate", plan.candidate)):
        if spec.kind == "url":
            asked = probe(role, spec, timed=role == "reference")
            if asked.warning:
                found.append(asked.warning)
                if asked.unusable:
                    unusable.append(asked.warning)
            speed = speed or asked.speed
        if spec.kind != "bundled" and "dtype" not in dict(spec.declared):
            found.append(f"{role}: no dtype declared, so the tolerances assume {spec.dtype}; declare the dtype it serves "
                         f"with --{role}-declare dtype=bf16 (or fp16, fp32)")
        if spec.kind == "url" and not spec.api_key_env:
            found.append(f"{role}: no API key variable named; if the server needs a key, name the variable holding it "
                         f"with --{role}-key-env NAME")
        if spec.log_file and not Path(spec.log_file).expanduser().is_file():
            found.append(f"{role}: the log file {spec.log_file} is not there (yet); gate 1's log rules will have no log")
    launched = [spec for spec in (plan.reference, plan.candidate) if spec.kind == "launch"]
    line = threads.advice(len(launched), [threads.planned(spec.command, dict(spec.env or {})) for spec in launched])
    if line:
        found.append(line.replace("engines launched", "engines will be launched", 1))
    if plan.reference.kind == "url":
        found += reference_load(plan, speed)
    return PlanWarnings(tuple(found), tuple(unusable))


def _duration(seconds: float, speed: Speed | None) -> str:
    return "" if speed is None else f"; about {seconds / 60:.1f} min at the reference's measured speed ({speed.describe()})"


def reference_load(plan: RunPlan, speed: Speed | None = None) -> list[str]:
    """The requests gate 5's replay and the performance gate send a URL reference — a
    production server, often — computed from the policy (and gate 5's traffic file): one line
    for each gate that loads it, with a duration estimate when `speed` (one short answer's,
    measured) is known: each request at that speed, `concurrency` at a time (a server that
    slows under load takes longer)."""
    from gatekeeper.gates.performance.baseline import choose
    from gatekeeper.gates.performance.gate import PerformanceGate
    from gatekeeper.gates.shadow.gate import ShadowGate
    from gatekeeper.gates.shadow.replay import stage_selection
    from gatekeeper.traffic.format import load_traffic

    run = {g.id for g in select(plan.gates) if g.id in plan.policy.enabled}
    found = []
    shadow = plan.policy.settings(ShadowGate.id) if ShadowGate.id in run else None
    if shadow is not None and not shadow.store:  # a pair store's answers are judged as stored: nothing is sent
        traffic = load_traffic(find_file(shadow.traffic), skip_bad=shadow.bad_lines == "skip")
        done: set[str] = set()
        stages = []
        for stage in shadow.stage_plan():
            chosen = stage_selection(traffic.records, stage, plan.seed, done)
            done.update(r.id for r in chosen)
            stages.append(f"{stage.name} {len(chosen)}")
        total = len(done)
        peak = max(max(st.concurrency or shadow.concurrency, st.concurrency or shadow.noise_floor_concurrency)
                   for st in shadow.stage_plan())
        answers = [r.request.get("max_tokens") or r.request.get("max_completion_tokens") or DEFAULT_ANSWER_TOKENS
                   for r in traffic.records if r.id in done]
        busy = 0.0 if speed is None else 2 * sum(speed.request_s(int(n)) for n in answers) / max(shadow.concurrency, 1)
        found.append(f"load on the reference: gate {ShadowGate.stage} ({ShadowGate.id}) replays up to {total} recorded requests "
                     f"({', '.join(stages)}) and sends each to the reference twice (its answer, and again for its own "
                     f"noise floor): up to {2 * total} requests at concurrency up to {peak}, plus a logprobs re-ask of "
                     f"each answer that differs{_duration(busy, speed)}" + (" (each answer at its max_tokens: a bound)" if speed else ""))
    performance = plan.policy.settings(PerformanceGate.id) if PerformanceGate.id in run else None
    if performance is not None and choose(performance.baseline, plan.candidate, plan.reference).kind == "reference":
        measured = sum(performance.pairs_at(level) * performance.requests_per_block(level) for level in performance.levels)
        peak = max(*performance.levels, *performance.sweep)
        tokens = performance.output_tokens[1]
        busy = 0.0 if speed is None else speed.request_s(tokens) * (
            performance.warmup_requests
            + sum(performance.pairs_at(lv) * performance.requests_per_block(lv) / lv for lv in performance.levels)
            + sum(performance.requests_per_block(lv) / lv for lv in performance.sweep))
        found.append(f"load on the reference: the performance gate (run when correctness passes) measures the reference "
                     f"as its baseline: {performance.warmup_requests} warm-up and {measured} measured requests at "
                     f"concurrency {', '.join(map(str, performance.levels))}, then a capacity sweep at concurrency "
                     f"{', '.join(map(str, performance.sweep))}: peak concurrency {peak}{_duration(busy, speed)}")
    return found
