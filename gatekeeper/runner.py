"""The staged run: start targets, probe them, run the gates in order, decide, write reports.

Records are written as checks are produced (records.jsonl), so a crash loses nothing; the
final reports are written atomically at the end. A gate that raises is an ERROR check (fail
closed), and a gate that fails hard stops the later gates, which are reported as not run.
"""

from __future__ import annotations

import datetime as dt
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from gatekeeper.capabilities import probe
from gatekeeper.client import Endpoint
from gatekeeper.config.policy import Policy
from gatekeeper.errors import EndpointError
from gatekeeper.gates.interface import GateContext, TargetRuntime
from gatekeeper.gates.registry import select
from gatekeeper.report.records import RecordWriter
from gatekeeper.report.writer import write_reports
from gatekeeper.results import CheckResult, GateResult, RunResult, Status, TargetInfo
from gatekeeper.targets.interface import Started, Target, TargetSpec
from gatekeeper.targets.spec import make_target
from gatekeeper.verdict import decide

_ORDER = [Status.ERROR, Status.FAIL, Status.WARN, Status.SKIP, Status.PASS]


@dataclass
class RunPlan:
    """Everything a run needs, resolved from the configuration layers."""

    reference: TargetSpec
    candidate: TargetSpec
    policy: Policy
    golden: list[Any]
    golden_paths: list[str]
    out_dir: Path
    run_id: str
    gates: list[str] | None = None
    seed: int = 0
    timeout_s: float = 120.0
    config: dict[str, Any] = field(default_factory=dict)


def _worst(checks: list[CheckResult]) -> Status:
    return min((c.status for c in checks), key=_ORDER.index, default=Status.SKIP)


def served_model(ep_url: str, spec: TargetSpec) -> str:
    """The model id to send: the configured one, else the first the server lists."""
    if spec.kind != "bundled" and spec.model:
        return spec.model
    try:
        ep = Endpoint("probe", ep_url, "")
        data = ep.get("/v1/models").json().get("data") or []
        ep.close()
        return data[0]["id"] if data else (spec.model or "")
    except (EndpointError, ValueError, KeyError, IndexError, AttributeError):
        return spec.model or ""


class Runner:
    """Runs one plan; `progress` receives one-line status messages."""

    def __init__(self, plan: RunPlan, progress: Callable[[str], None] = lambda m: None) -> None:
        self.plan = plan
        self.progress = progress
        self.run_dir = plan.out_dir / plan.run_id
        self.targets: dict[str, Target] = {}

    def _start_targets(self) -> dict[str, Started]:
        started: dict[str, Started] = {}

        def start(role: str, spec: TargetSpec) -> None:
            self.progress(f"starting {role}: {spec.describe()}")
            target = make_target(role, spec)
            self.targets[role] = target
            started[role] = target.start(str(self.run_dir))
            s = started[role]
            self.progress(f"{role} " + (f"ready in {s.startup_s:.1f} s" if s.ready else f"did not start: {s.error}"))

        threads = [threading.Thread(target=start, args=(r, s)) for r, s in
                   (("reference", self.plan.reference), ("candidate", self.plan.candidate))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return started

    def run(self) -> RunResult:
        """Execute the plan; always stops what it started and writes the reports."""
        plan = self.plan
        self.run_dir.mkdir(parents=True, exist_ok=True)
        started_at = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        records = RecordWriter(self.run_dir / "records.jsonl")
        endpoints: dict[str, Endpoint] = {}
        gates: list[GateResult] = []
        infos: list[TargetInfo] = []
        try:
            started = self._start_targets()
            runtimes: dict[str, TargetRuntime] = {}
            caps: dict[str, dict[str, Any]] = {}
            for role, spec in (("reference", plan.reference), ("candidate", plan.candidate)):
                s, target = started[role], self.targets[role]
                model = served_model(s.base_url, spec) if s.ready else (spec.model or "")
                endpoints[role] = Endpoint(role, s.base_url, model, target.api_key(), plan.timeout_s)
                runtimes[role] = TargetRuntime(role, spec.kind, spec.describe(), s.startup_s, spec.dtype, s.ready, s.error,
                                               target.log_lines(), target.alive)
                if s.ready:
                    self.progress(f"probing {role} capabilities")
                    caps[role] = probe(endpoints[role])
                else:
                    caps[role] = {"notes": {"all": "target did not start"}}
                infos.append(TargetInfo(role, spec.kind, spec.describe(), s.base_url, model, s.startup_s, None, caps[role],
                                        s.log_path))
            gates = self._run_gates(endpoints, runtimes, caps, records)
        finally:
            for target in self.targets.values():
                target.stop()
            for ep in endpoints.values():
                ep.close()
            records.close()
        verdict, reasons = decide(gates)
        result = RunResult(
            run_id=plan.run_id,
            started_at=started_at,
            finished_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            verdict=verdict,
            reasons=tuple(reasons),
            targets=tuple(infos),
            gates=tuple(gates),
            timings=tuple(t for ep in endpoints.values() for t in ep.timings),
            policy=plan.policy.path,
            golden_sets=tuple(plan.golden_paths),
            seed=plan.seed,
            config=plan.config,
        )
        write_reports(result, self.run_dir)
        return result

    def _run_gates(self, endpoints, runtimes, caps, records) -> list[GateResult]:
        plan = self.plan
        results: list[GateResult] = []
        stopped_by: GateResult | None = None
        for gate_cls in select(plan.gates):
            if gate_cls.id not in plan.policy.enabled:
                continue
            gate = gate_cls()
            description = (sys.modules[gate_cls.__module__].__doc__ or "").strip()
            ctx = GateContext(gate.id, endpoints["reference"], endpoints["candidate"], plan.policy.settings(gate.id),
                              plan.policy.is_blocking, caps, plan.golden, plan.seed, runtimes, records.write, self.progress)
            t0 = time.perf_counter()
            if stopped_by is not None:
                ctx.check("not_run", Status.SKIP, f"not run: gate {stopped_by.stage} ({stopped_by.id}) failed")
            elif not all(rt.ready for rt in runtimes.values()) and gate.id != "startup":
                ctx.check("not_run", Status.SKIP, "not run: a target did not start")
            else:
                self.progress(f"gate {gate.stage}: {gate.title}")
                for ep in endpoints.values():
                    ep.gate = gate.id
                try:
                    gate.run(ctx)
                except EndpointError as e:
                    ctx.error_check("gate", e)
                except Exception as e:  # fail closed: a crashing gate is an ERROR, never a pass
                    (self.run_dir / f"crash-{gate.id}.txt").write_text(traceback.format_exc())
                    ctx.check("gate", Status.ERROR, f"gate crashed: {type(e).__name__}: {e}")
            hard = any(c.blocking and (c.status == Status.FAIL or (gate.id == "startup" and c.status == Status.ERROR))
                       for c in ctx.checks)
            result = GateResult(gate.id, gate.stage, gate.title, description, _worst(ctx.checks), tuple(ctx.checks),
                                time.perf_counter() - t0, hard and stopped_by is None, tuple(ctx.notes))
            results.append(result)
            self.progress(f"gate {gate.stage} {gate.id}: {result.status.value}")
            if result.stopped_run:
                stopped_by = result
        return results
