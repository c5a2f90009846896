"""One bisect step: judge one build with a real `gatekeeper run`.

The step's run config launches the good build as the reference and the build under test as the
candidate, both from the launch template (`{build}` filled in; `{port}`, `{model}` and `{api_key}`
left for the launch), and runs only the gates of the bisected checks (gate 1 always: it reports a
build that does not start). Each named check then decides: any FAIL → bad; every one PASS →
good; otherwise (undecided, skipped, an ERROR) the build is asked again with the next seed, up to
`attempts` runs, and then skipped with the reason. A build that does not start (or install) is
skipped, not bad — unless the check being bisected is its start (`startup.ready.candidate`); a
good build that does not start as the reference skips the step with that reason too.

Each run's summary.json is read by `gatekeeper.run_summary`; a run that left none that reads (a
`SummaryError`: no file, corrupt, no verdict) gave no answer, and the build is asked again, the
reason kept.
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gatekeeper.json_types import JsonObject
from gatekeeper.atomic import write_atomic
from gatekeeper.bisect.search import Outcome
from gatekeeper.gates.startup.checks import READY_CANDIDATE, READY_REFERENCE, ReadyFinding
from gatekeeper.report.jsonable import to_jsonable
from gatekeeper.results import CheckResult, Status
from gatekeeper.run_summary import RunSummary, SummaryError, SummaryMissing, read_summary

READY = READY_CANDIDATE


@dataclass(frozen=True)
class Setup:
    """What every step shares: the launch template, the good build, the checks and the run's
    options (`run_args`: policy, model, timeout ... as `gatekeeper run` arguments)."""

    template: str
    good: str
    checks: tuple[str, ...]
    model: str | None = None
    ready_timeout_s: float = 600.0
    run_args: tuple[str, ...] = ()
    attempts: int = 2

    @property
    def gates(self) -> str:
        """The gates the checks belong to, gate 1 first."""
        gates = ["startup"]
        for check in self.checks:
            gate = check.split(".", 1)[0]
            if gate not in gates:
                gates.append(gate)
        return ",".join(gates)

    def target(self, build: str) -> JsonObject:
        """The run-config mapping that launches `build` (`{build}` the build, `{version}` the
        version of a `PACKAGE==VERSION` build, else the build too)."""
        version = build.split("==", 1)[1] if "==" in build else build
        command = self.template.replace("{build}", build).replace("{version}", version)
        spec: JsonObject = {"kind": "launch", "command": command,
                                "ready_timeout_s": self.ready_timeout_s}
        if self.model:
            spec["model"] = self.model
        return spec


@dataclass(frozen=True, kw_only=True)
class StepResult:
    """One build's judgement: its outcome and why, each named check's status and figures in the
    last run, the runs' directories, seeds and wall time."""

    build: str
    outcome: Outcome
    why: str
    checks: dict[str, dict[str, Any]] = field(default_factory=dict)
    run_dirs: tuple[str, ...] = ()
    seeds: tuple[int, ...] = ()
    seconds: float = 0.0
    launch_s: float | None = None  # how long the build took to start (gate 1's readiness), in the last run

    def to_json(self) -> JsonObject:
        """The step as a bisect-log line."""
        return {"build": self.build, "outcome": self.outcome.value, "why": self.why, "checks": self.checks,
                "run_dirs": list(self.run_dirs), "seeds": list(self.seeds), "seconds": round(self.seconds, 1),
                "launch_s": self.launch_s}

    @staticmethod
    def from_json(data: dict[str, Any]) -> "StepResult":
        """A step read back from the bisect log."""
        return StepResult(build=data["build"], outcome=Outcome(data["outcome"]), why=data["why"], checks=data.get("checks") or {},
                          run_dirs=tuple(data.get("run_dirs") or ()), seeds=tuple(data.get("seeds") or ()),
                          seconds=float(data.get("seconds") or 0), launch_s=data.get("launch_s"))


def judge_build(setup: Setup, build: str, step_dir: Path, seed: int, progress=lambda m: None) -> StepResult:
    """Run the checks on `build` (at most `setup.attempts` runs, seeds `seed`, `seed + 1`, ...)."""
    t0 = time.perf_counter()
    step_dir.mkdir(parents=True, exist_ok=True)
    config = step_dir / "run-config.yaml"
    write_atomic(config, yaml.safe_dump({"reference": setup.target(setup.good), "candidate": setup.target(build)},
                                        sort_keys=False))
    run_dirs: list[str] = []
    seeds: list[int] = []
    checks: dict[str, dict[str, Any]] = {}
    why = ""
    launch_s: float | None = None
    for attempt in range(setup.attempts):
        s = seed + attempt
        seeds.append(s)
        progress(f"build {build}: run {attempt + 1} of at most {setup.attempts} (seed {s}, gates {setup.gates})")
        summary, run_dir, stderr = _run(config, setup, step_dir / f"seed{s}", s)
        if run_dir is not None:
            run_dirs.append(str(run_dir))
        if isinstance(summary, SummaryError):
            said = "" if isinstance(summary, SummaryMissing) else f" ({summary})"
            why = f"the run wrote no verdict{said}: {stderr or 'no output'}"
            continue
        found = {c.id: c for c in summary.checks}
        checks = {cid: _brief(found.get(cid)) for cid in setup.checks}
        launch_s = ReadyFinding.of(found[READY]).startup_s if READY in found else None
        outcome, why = decide(setup.checks, found)
        if outcome is not None:
            return StepResult(build=build, outcome=outcome, why=why, checks=checks, run_dirs=tuple(run_dirs), seeds=tuple(seeds),
                              seconds=time.perf_counter() - t0, launch_s=launch_s)
        if why.startswith(("the candidate did not start", "the good build did not start")):
            break  # another seed does not make a build start
    return StepResult(build=build, outcome=Outcome.SKIP, why=f"skipped: {why}", checks=checks, run_dirs=tuple(run_dirs), seeds=tuple(seeds),
                      seconds=time.perf_counter() - t0, launch_s=launch_s)


def decide(checks: tuple[str, ...], found: dict[str, CheckResult]) -> tuple[Outcome | None, str]:
    """(good, bad or None for undecided, and why) from one run's checks by id."""
    ref = found.get(READY_REFERENCE)
    if ref is not None and ref.status is not Status.PASS:
        return None, f"the good build did not start as the reference: {ref.reason[:200]}"
    ready = found.get(READY)
    if READY not in checks and ready is not None and ready.status is not Status.PASS:
        return None, f"the candidate did not start: {ready.reason[:200]}"

    def status(cid: str) -> Status | None:
        return found[cid].status if cid in found else None

    failed = [cid for cid in checks if status(cid) is Status.FAIL]
    if failed:
        return Outcome.BAD, "; ".join(f"{cid} FAIL: {found[cid].reason[:200]}" for cid in failed)
    if all(status(cid) is Status.PASS for cid in checks):
        return Outcome.GOOD, "; ".join(f"{cid} PASS" for cid in checks)
    open_ = [f"{cid} {found[cid].status.value} ({found[cid].reason[:160]})" if cid in found
             else f"{cid} missing (the run has no such check)" for cid in checks if status(cid) is not Status.PASS]
    return None, "undecided: " + "; ".join(open_)


def _brief(check: CheckResult | None) -> JsonObject:
    """A check as a step keeps it: status, reason and its figures (non-finite numbers spelt as in summary.json)."""
    if check is None:
        return {"status": "missing"}
    return {"status": check.status.value, "reason": check.reason, "metrics": to_jsonable(check.metrics)}


def _run(config: Path, setup: Setup, out: Path, seed: int) -> tuple[RunSummary | SummaryError, Path | None, str]:
    """One `gatekeeper run`: (its summary or why it has none, its run directory, the tail of its stderr)."""
    out.mkdir(parents=True, exist_ok=True)
    before = set(out.iterdir())
    done = subprocess.run([sys.executable, "-m", "gatekeeper.cli", "run", "-c", str(config), "--gates", setup.gates,
                           "--seed", str(seed), "--out", str(out), *setup.run_args],
                          capture_output=True, text=True, check=False)
    new = sorted(p for p in set(out.iterdir()) - before if p.is_dir())
    run_dir = new[-1] if new else None
    tail = done.stderr.strip().splitlines()[-1][:300] if done.stderr.strip() else ""
    if run_dir is None:
        return SummaryMissing(out / "summary.json", "the run left no run directory"), None, tail
    try:
        return read_summary(run_dir), run_dir, tail
    except SummaryError as e:
        return e, run_dir, tail
