"""What `gatekeeper run --dry-run` warns a user gating real servers about: an undeclared dtype, a
URL target with no key variable named or answering 401/403 (`plan_probe.py` asks each URL target
for its models), a missing log file, and the load the run puts on a URL reference (often a
production server): requests, peak concurrency, and a duration estimate scaled by one short
answer's measured speed."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gatekeeper.gates.registry import select
from gatekeeper.run.plan_probe import Speed, probe
from gatekeeper.run_plan import RunPlan
from gatekeeper.targets import threads


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
    """The requests the selected, enabled gates send a URL reference — a production server, often
    — as each gate computes them from the policy (`Gate.reference_load`: gate 5's replay, the
    performance gate's baseline): one line for each gate that loads it, with a duration estimate
    when `speed` (one short answer's, measured) is known: each request at that speed,
    `at_once` at a time (a server that slows under load takes longer)."""
    found = []
    for gate in select(plan.gates):
        load = gate.reference_load(plan.policy.settings(gate.id), plan) if gate.id in plan.policy.enabled else None
        if load is not None:
            busy = 0.0 if speed is None else sum(speed.request_s(n) for n in load.answer_tokens) * load.times / load.at_once
            found.append(f"load on the reference: {load.what}{_duration(busy, speed)}"
                         + (" (each answer at its max_tokens: a bound)" if speed and load.bound else ""))
    return found
