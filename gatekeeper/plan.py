"""Turning resolved options into a RunPlan: targets, policy, golden sets, the run directory."""

from __future__ import annotations

import datetime as dt
import secrets
from dataclasses import replace
from pathlib import Path
from typing import Any

from gatekeeper.config.policy import load_policy
from gatekeeper.config.run_config import find_file
from gatekeeper.errors import ConfigError
from gatekeeper.gates.registry import gate_defaults, select
from gatekeeper.runner import RunPlan
from gatekeeper.targets.spec import parse_target


def new_run_id() -> str:
    """A sortable, unique run id: UTC time plus a short random suffix."""
    return dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def load_golden(paths: list[str]) -> list[Any]:
    """Load and validate every golden set (ConfigError names file, line and key)."""
    from gatekeeper.golden.golden_set import load_golden_set

    return [load_golden_set(find_file(p)) for p in paths]


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
    policy = load_policy(find_file(values["policy"]), gate_defaults())
    gates = values["gates"]
    select(gates)  # unknown gate names fail here, before anything starts
    golden_paths = [str(find_file(p)) for p in values["golden"]]
    needs_golden = not gates or "golden" in gates
    golden = load_golden(golden_paths) if needs_golden and golden_paths else []
    if needs_golden and "golden" in policy.enabled:
        from gatekeeper.gates.golden import validate_settings

        validate_settings(policy.settings("golden"), golden, policy.path)
    return RunPlan(
        reference=reference,
        candidate=candidate,
        policy=policy,
        golden=golden,
        golden_paths=golden_paths,
        out_dir=Path(values["out"]),
        run_id=new_run_id(),
        gates=gates,
        seed=values["seed"],
        timeout_s=values["timeout"],
        config={k: (v if k not in ("reference", "candidate") else str(v)) for k, v in values.items()} | {
            "sources": sources},
    )
