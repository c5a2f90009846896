"""Turning resolved options into a RunPlan: targets, policy, golden sets, the run directory.

Everything a run cannot recover from is found here, before any engine starts (ConfigError, exit
code 3): the targets, the policy and each gate's typed settings, the golden sets a selected gate
uses, and whatever each selected gate checks in its `validate(settings, plan)`.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import secrets
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from gatekeeper.config.policy import Policy, load_policy
from gatekeeper.config.run_config import find_file
from gatekeeper.config.run_options import OptionSources, RoleOptions, RunOptions
from gatekeeper.traffic.store.location import is_postgres
from gatekeeper.errors import ConfigError
from gatekeeper.gates.registry import select, settings_types
from gatekeeper.golden.case_selection import named_cases, select_cases
from gatekeeper.golden.golden_set import GoldenSet, load_golden_set
from gatekeeper.report_links import ReportLinks
from gatekeeper.run_plan import RunPlan
from gatekeeper.targets.interface import TargetSpec, normalise_dtype
from gatekeeper.targets.spec import parse_declared, parse_target


def load_gate_policy(path: str) -> Policy:
    """The policy at `path` (found as a run finds it), every gate's section checked against its
    settings (the live proxy reads only gate 5's section: `live/policy.py`)."""
    return load_policy(find_file(path), settings_types())


def new_run_id() -> str:
    """A sortable, unique run id: UTC time plus a short random suffix."""
    return dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def load_golden(paths: list[str]) -> tuple[GoldenSet, ...]:
    """Load and validate every golden set (ConfigError names file, line and key)."""
    return tuple(load_golden_set(find_file(p)) for p in paths)


def build_plan(options: RunOptions, sources: OptionSources, run_id: str | None = None, *,
               asks_servers: bool = True) -> RunPlan:
    """A validated RunPlan; every problem is a ConfigError (exit code 3). `run_id`: the run's
    id when the caller chose it (a matrix cell writes into its run directory first), else a new one.
    `asks_servers=False` (a rejudge): the key variables the targets name need not be set."""
    file_of = sources.file_of
    reference = parse_target(options.reference, "reference", file_of("reference"))
    candidate = parse_target(options.candidate, "candidate", file_of("candidate"))
    in_file = {"reference": bool(reference.engine_options or reference.faults),  # for the engine's errors
               "candidate": bool(candidate.engine_options or candidate.faults)}
    reference, candidate = _models(options, reference, candidate, sources)
    if options.candidate_faults or options.candidate_opts:
        if candidate.kind != "bundled":
            raise ConfigError("candidate faults and engine options apply to a bundled candidate only (declare a URL or "
                              "launch candidate's path with --candidate-declare)", key="candidate")
        from_flags = tuple((k, str(v)) for k, v in options.candidate_opts.items())
        merged = dict(candidate.engine_options)
        merged.update(dict(from_flags))
        candidate = replace(candidate, engine_options=tuple(merged.items()),
                            faults=candidate.faults + tuple(options.candidate_faults))
    reference = _declared(reference, options.reference_declare, "reference_declare")
    candidate = _declared(candidate, options.candidate_declare, "candidate_declare")
    reference = _key_and_log(reference, "reference", options.role("reference"), sources)
    candidate = _key_and_log(candidate, "candidate", options.role("candidate"), sources)
    for role, spec in (("reference", reference), ("candidate", candidate)):
        named = options.role(role).key_env  # the key option, when it set the variable; else the target's own key
        if asks_servers:  # a rejudge asks no server: it needs no key
            _check_key(role, spec, file_of(f"{role}_key_env") if named else file_of(role),
                       sources.label(f"{role}_key_env") if named else f"{role}.api_key_env")
        if spec.kind == "bundled" and (spec.engine_options or spec.faults):
            where = [f"{role}.options/faults"] if in_file[role] else []
            if role == "candidate":
                where += [sources.label(name) for name, given in (("candidate_opts", options.candidate_opts),
                                                                  ("candidate_faults", options.candidate_faults)) if given]
            _check_engine(role, spec, file_of(role) if in_file[role] else None, " or ".join(where))
    policy = load_gate_policy(options.policy)
    if options.shadow_store:
        store = options.shadow_store  # a PostgreSQL URL as given; a SQLite path found
        policy = policy.with_setting("shadow", "store", store if is_postgres(store) else str(find_file(store)))
    restricted = []
    if options.cases:
        policy = policy.with_setting("golden", "cases", list(options.cases))
        restricted.append(f"golden cases chosen by --cases {' '.join(options.cases)}")
    if options.limit:
        policy = policy.with_setting("golden", "limit", options.limit)
        restricted.append(f"at most {options.limit} golden cases (--limit)")
    try:
        selected = [g for g in select(options.gates) if g.id in policy.enabled]  # unknown names fail here
    except ConfigError as e:
        if file_of("gates") is None:
            raise
        raise ConfigError(e.message, file_of("gates"), key="gates") from None
    golden_paths = tuple(str(find_file(p)) for p in options.golden)
    golden = load_golden(list(golden_paths)) if any(g.uses_golden_sets for g in selected) else ()
    if restricted:
        _check_case_flags(options, golden, [g.id for g in selected])
    plan = RunPlan(
        reference=reference,
        candidate=candidate,
        policy=policy,
        golden=golden,
        golden_paths=golden_paths,
        out_dir=Path(options.out),
        run_id=run_id or new_run_id(),
        gates=options.gates or None,
        seed=options.seed,
        timeout_s=options.timeout,
        on_rollback=options.on_rollback,
        restricted=tuple(restricted),
        reference_cache=options.reference_cache or None,
        report_links=ReportLinks(options.report_url or None),
        options=options,
        sources=sources,
    )
    for gate in selected:
        gate.validate(policy.settings(gate.id), plan)
    return plan


def _check_case_flags(options: RunOptions, golden: tuple[GoldenSet, ...], gates: list[str]) -> None:
    """--cases and --limit choose golden cases: refused when gate 3 does not run, and a glob
    matching no case is named with the flag (not the policy's golden.cases)."""
    flags = " and ".join(f for f, given in (("--cases", options.cases), ("--limit", options.limit)) if given)
    if "golden" not in gates:
        raise ConfigError(f"{flags}: choose golden cases, and this run does not run gate 3 (golden)")
    if options.cases:
        try:
            select_cases(named_cases(golden), list(options.cases))
        except ConfigError as e:
            raise ConfigError(f"--cases: {e.message}") from None


def _models(options: RunOptions, reference: TargetSpec, candidate: TargetSpec,
            sources: OptionSources) -> tuple[TargetSpec, TargetSpec]:
    """Apply `--model` by target kind — a checkpoint directory for bundled targets, the served
    model id for URL and launch targets — and `--served-model` to URL and launch targets
    (`sources`: the run config an option came from, for its errors)."""
    specs = [reference, candidate]
    model, file_of = options.model, sources.file_of
    if model:
        found = find_file(model)
        if found.is_dir():
            path = str(found.resolve())
            specs = [replace(s, model=s.model or path) if s.kind == "bundled" else s for s in specs]
        elif all(s.kind == "bundled" for s in specs):
            raise ConfigError(f"model directory {model!r} not found (bundled targets load a checkpoint "
                              "directory; a served model id is for URL and launch targets)", file_of("model"), key="model")
        else:
            specs = [replace(s, model=s.model or model) if s.kind != "bundled" else s for s in specs]
    if options.served_model:
        if all(s.kind == "bundled" for s in specs):
            raise ConfigError("applies to URL and launch targets only (a bundled target serves its checkpoint)",
                              file_of("served_model"), key="served_model")
        specs = [replace(s, model=options.served_model) if s.kind != "bundled" else s for s in specs]
    return specs[0], specs[1]


def _declared(spec: TargetSpec, flags: Mapping[str, str], key: str) -> TargetSpec:
    """The spec with the flags' declared path merged in (flags win); a bundled target's declared
    dtype must match its engine option."""
    merged = {**dict(spec.declared), **parse_declared(dict(flags), key)} if flags else dict(spec.declared)
    if spec.kind == "bundled" and "dtype" in merged:
        engine = normalise_dtype(dict(spec.engine_options).get("dtype", "float32"))
        if engine != merged["dtype"]:
            raise ConfigError(f"declares dtype {merged['dtype']} but the bundled engine runs {engine} (set it with "
                              "--candidate-opt dtype=...)", key=key)
    return replace(spec, declared=tuple(merged.items()))


def _key_and_log(spec: TargetSpec, role: str, given: RoleOptions, sources: OptionSources) -> TargetSpec:
    """The spec with its role's key and log options applied (`--candidate-key-env`,
    `--candidate-log-file`, `--candidate-log-command` and their variables and run-config keys):
    they win over the target's own `api_key_env`, `log_file` and `log_command`. The key goes to
    URL and launch targets, the log source to URL targets only (gatekeeper captures the log of
    an engine it starts)."""
    label, file_of = sources.label, sources.file_of
    key_name, file_name, command_name = f"{role}_key_env", f"{role}_log_file", f"{role}_log_command"
    if given.key_env:
        if spec.kind == "bundled":
            raise ConfigError("applies to URL and launch targets only (the bundled engine gatekeeper starts takes no key)",
                              file_of(key_name), key=label(key_name))
        spec = replace(spec, api_key_env=given.key_env)
    log_file, log_command = given.log_file, given.log_command
    if log_file and log_command:
        raise ConfigError(f"give the {role}'s log as a file or as a command, not both (also {label(command_name)})",
                          file_of(file_name), key=label(file_name))
    if log_file or log_command:
        name = file_name if log_file else command_name
        if spec.kind != "url":
            raise ConfigError(f"applies to URL targets only (gatekeeper captures the log of the {spec.kind} {role} it "
                              "starts)", file_of(name), key=label(name))
        spec = replace(spec, log_file=log_file, log_command=log_command)
    if spec.log_command:
        where = (file_of(command_name), label(command_name)) if log_command else (file_of(role), f"{role}.log_command")
        try:
            argv = shlex.split(spec.log_command)
        except ValueError as e:
            raise ConfigError(f"is not a command line: {e}", where[0], key=where[1]) from None
        if not argv:
            raise ConfigError("is an empty command", where[0], key=where[1])
    return spec


def _check_key(role: str, spec: TargetSpec, path: str | None, key: str) -> None:
    """A named key variable must be set: an unset one would silently send no key (`key`: where
    the name was given, for the error)."""
    if spec.api_key_env and spec.api_key_env not in os.environ:
        raise ConfigError(f"names {spec.api_key_env}, which is not set in the environment", path,
                          key=key, hint=f"export {spec.api_key_env}=... (the key itself never goes in a file)")


def _check_engine(role: str, spec: TargetSpec, path: str | None = None, key: str | None = None) -> None:
    """A bundled target's engine options and faults, checked by the engine's own rules in a
    subprocess (the gate side never imports the engine); an error names `path` and `key`, where
    they were written."""
    request = {"profile": spec.profile, "options": dict(spec.engine_options), "faults": list(spec.faults)}
    try:
        done = subprocess.run([sys.executable, "-m", "gatekeeper.engine.validate"], input=json.dumps(request),
                              capture_output=True, text=True, timeout=60, check=False)
        answer = json.loads(done.stdout or "{}")
    except (OSError, subprocess.SubprocessError, ValueError) as e:
        raise ConfigError(f"cannot check the bundled engine's options: {e}", key=role) from None
    if done.returncode != 0 or "error" not in answer:
        raise ConfigError(f"cannot check the bundled engine's options: {done.stderr.strip()[-300:]}", key=role)
    if answer["error"]:
        flag = key or ("--candidate-opt/--candidate-fault" if role == "candidate" else f"{role} (options/faults)")
        raise ConfigError(answer["error"], path, key=flag)


def check_faults(faults: tuple[str, ...] | list[str]) -> None:
    """A bundled candidate's faults checked by the engine's rules, without a run (`gatekeeper
    matrix plan --candidate-fault`)."""
    if faults:
        _check_engine("candidate", TargetSpec(kind="bundled", faults=tuple(faults)))


def describe_plan(plan: RunPlan, warnings: Sequence[str] = ()) -> str:
    """The resolved plan as text (`gatekeeper run --dry-run`): targets with their declared paths,
    the policy, the gates in order with their blocking rule, the golden cases, where reports go,
    then `warnings` (`plan_warnings.py`'s, which asks URL targets), one `warning:` line each."""
    lines = [f"run {plan.run_id} (seed {plan.seed}, request deadline {plan.timeout_s:g} s)"]
    for role, spec in (("reference", plan.reference), ("candidate", plan.candidate)):
        declared = ", ".join(f"{k}={v}" for k, v in spec.declared) or "nothing declared"
        model = f", model {spec.model}" if spec.model else ""
        key = f", key from ${spec.api_key_env}" if spec.api_key_env else ""
        log = (f", log from file {spec.log_file}" if spec.log_file else f", log from the command '{spec.log_command}'"
               if spec.log_command else ", no log" if spec.kind == "url" else "")
        lines.append(f"{role}: {spec.describe()}{model}{key}{log}; dtype {spec.dtype} ({declared})")
    lines.append(f"policy: {plan.policy.path} (from {plan.sources.get('policy', 'default')})")
    for gate in select(plan.gates):
        state = "enabled" if gate.id in plan.policy.enabled else "disabled by policy"
        lines.append(f"  gate {gate.stage} {gate.id}: {gate.title} — {state}")
    if plan.golden:
        golden = plan.policy.settings("golden")
        cases = [name for name, _ in select_cases(named_cases(plan.golden), golden.cases, golden.limit)]
        lines.append(f"golden: {len(cases)} cases from {', '.join(plan.golden_paths)}: {', '.join(cases)}")
    lines += [f"partial: {what} (the verdict will say so)" for what in plan.restricted]
    lines.append(f"reports: {plan.out_dir / plan.run_id}/")
    return "\n".join(lines + [f"warning: {w}" for w in warnings])
