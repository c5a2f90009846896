"""Turning resolved options into a RunPlan: targets, policy, golden sets, the run directory.

Everything a run cannot recover from is found here, before any engine starts (ConfigError, exit
code 3): the targets, the policy and each gate's typed settings, the golden sets a selected gate
uses, and whatever each selected gate checks in its `validate(settings, plan)`.
"""

from __future__ import annotations

import datetime as dt
import secrets
from dataclasses import replace
from pathlib import Path
from typing import Any

from gatekeeper.config.policy import load_policy
from gatekeeper.config.run_config import find_file
from gatekeeper.errors import ConfigError
from gatekeeper.gates.registry import select, settings_types
from gatekeeper.golden.golden_set import GoldenSet, load_golden_set
from gatekeeper.run_plan import RunPlan
from gatekeeper.targets.spec import parse_target


def new_run_id() -> str:
    """A sortable, unique run id: UTC time plus a short random suffix."""
    return dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def load_golden(paths: list[str]) -> tuple[GoldenSet, ...]:
    """Load and validate every golden set (ConfigError names file, line and key)."""
    return tuple(load_golden_set(find_file(p)) for p in paths)


def build_plan(values: dict[str, Any], sources: dict[str, str]) -> RunPlan:
    """A validated RunPlan; every problem is a ConfigError (exit code 3)."""
    def file_of(name: str) -> str | None:
        return sources[name] if sources[name] not in ("default", "flag", "env") else None

    reference = parse_target(values["reference"], "reference", file_of("reference"))
    candidate = parse_target(values["candidate"], "candidate", file_of("candidate"))
    if values["model"]:
        model = str(find_file(values["model"]).resolve())
        if not Path(model).is_dir():
            raise ConfigError(f"model directory {values['model']!r} not found", key="model")
        reference = replace(reference, model=reference.model or model) if reference.kind == "bundled" else reference
        candidate = replace(candidate, model=candidate.model or model) if candidate.kind == "bundled" else candidate
    if values["candidate_faults"] or values["candidate_opts"]:
        if candidate.kind != "bundled":
            raise ConfigError("candidate faults and engine options apply to a bundled candidate only", key="candidate")
        from_flags = tuple((k, str(v)) for k, v in values["candidate_opts"].items())
        merged = dict(candidate.engine_options)
        merged.update(dict(from_flags))
        candidate = replace(candidate, engine_options=tuple(merged.items()),
                            faults=candidate.faults + tuple(values["candidate_faults"]))
    policy = load_policy(find_file(values["policy"]), settings_types())
    selected = [g for g in select(values["gates"]) if g.id in policy.enabled]  # unknown names fail here
    golden_paths = tuple(str(find_file(p)) for p in values["golden"])
    golden = load_golden(list(golden_paths)) if any(g.uses_golden_sets for g in selected) else ()
    plan = RunPlan(
        reference=reference,
        candidate=candidate,
        policy=policy,
        golden=golden,
        golden_paths=golden_paths,
        out_dir=Path(values["out"]),
        run_id=new_run_id(),
        gates=tuple(values["gates"]) if values["gates"] else None,
        seed=values["seed"],
        timeout_s=values["timeout"],
    )
    for gate in selected:
        gate.validate(policy.settings(gate.id), plan)
    return plan
