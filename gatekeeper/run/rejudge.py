"""Running the gates again on a finished run's recorded answers (`gatekeeper rejudge`).

`ReplayRunner` is the runner with the targets taken out: each "target" is what the recorded run
knew about it (how it started, its log, whether it still answered after each gate), and every
request is answered from the recording (`tape/recording.py`). A request the recorded run did not
make is an `unrecorded` ERROR, never a guess. Gates whose evidence is measured load
(`Gate.measures_machine`: the performance gate) cannot be replayed: their recorded result is
carried over when the policy asks them the same question, and is a blocking SKIP otherwise.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from collections.abc import Callable, Mapping
from typing import Any

from gatekeeper.endpoints.client import Endpoint
from gatekeeper.errors import EndpointError
from gatekeeper.gates.interface import Gate, GateContext, utc_now
from gatekeeper.targets.runtime import TargetRuntime
from gatekeeper.report.records import RecordWriter
from gatekeeper.results import CheckResult, GateResult, RequestTiming, Status
from gatekeeper.run.run_dir import Resumable, finished_gates
from gatekeeper.run_plan import RunPlan
from gatekeeper.run.liveness import Liveness
from gatekeeper.run.runner import ROLES, Runner
from gatekeeper.tape.recording import Recorded
from gatekeeper.tape.session import AnswerTape
from gatekeeper.targets.interface import Started, Target, TargetSpec


class RecordedTarget(Target):
    """A target as the recorded run knew it; nothing is started or stopped."""

    def __init__(self, role: str, spec: TargetSpec, recorded: dict[str, Any]) -> None:
        self.role, self.spec, self.recorded = role, spec, recorded
        self.log_error = recorded.get("log_error")

    def start(self, log_dir: str) -> Started:
        """What the recorded start gave."""
        r = self.recorded
        return Started(r["base_url"], r.get("model"), r["ready"], r.get("startup_s"), r.get("error"), r.get("log_path"))

    def stop(self) -> None:
        """Nothing runs."""

    def log_lines(self) -> list[str]:
        """The log lines the startup gate read."""
        return list(self.recorded.get("log_lines", []))

    def has_log(self) -> bool:
        """Whether the recorded run could read its log."""
        return bool(self.recorded.get("has_log", False))

    def api_key(self) -> str | None:
        """No key: no server is asked."""
        return None


class ReplayRunner(Runner):
    """The runner on a recorded run's answers; `original` is the plan that run was made with."""

    def __init__(self, plan: RunPlan, original: RunPlan, source_dir: Path,
                 progress: Callable[[str], None] = lambda m: None, fingerprint: dict[str, str] | None = None) -> None:
        super().__init__(plan, progress, fingerprint)
        self.original, self.source_dir = original, source_dir
        self.recorded = Recorded(source_dir)
        self.measured: Resumable = finished_gates(source_dir)

    def _new_tape(self) -> AnswerTape:
        return AnswerTape(self.run_dir, self.plan.run_id, replay=self.recorded, redact=self.plan.redactor().text)

    def _start_targets(self) -> dict[str, Started]:
        specs = {"reference": self.plan.reference, "candidate": self.plan.candidate}
        started = {}
        for role in ROLES:
            self.targets[role] = target = RecordedTarget(role, specs[role], self.recorded.targets[role])
            started[role] = target.start(str(self.run_dir))
        self.progress(f"re-judging the answers recorded in {self.source_dir}: no server is asked")
        return started

    def _served_model(self, role: str, s: Started, spec: TargetSpec, target: Target) -> str:
        return str(self.recorded.targets[role]["model"])

    def _open_cache(self, base_url: str, model: str, spec: TargetSpec, target: Target) -> None:
        return None  # every answer comes from the recording

    def _launch(self, role: str, spec: TargetSpec) -> Endpoint:
        recorded = self.recorded.targets.get(role)
        if recorded is None:
            raise EndpointError("unrecorded", role, f"the recorded run did not start the {role}: its answers are not "
                                "in the recording")
        ep = self._endpoint(role, recorded["base_url"], str(recorded["model"]), None, spec)
        ep.gate = self._gate
        self._extra.append(ep)
        return ep

    def _gone(self, ctx: GateContext, endpoints: Mapping[str, Endpoint], runtimes: dict[str, TargetRuntime]) -> Liveness:
        r = self.recorded.liveness.get(ctx.gate_id)
        if r is None:  # the recorded run did not ask (e.g. a target had not started)
            return Liveness({role: False for role in ROLES}, {role: True for role in ROLES})
        return Liveness.from_json(r)

    def _rejudged_from(self) -> str | None:
        return self.source_dir.name

    def _carried_over(self, gate: Gate, records: RecordWriter, stopped_by: GateResult | None) -> GateResult | None:
        if not gate.measures_machine or stopped_by is not None:
            return None
        recorded = self.measured.gates.get(gate.id)
        why = _why_not_carried(gate.id, recorded, self.original, self.plan)
        if recorded is not None and why is None:
            result = replace(recorded, reused=True, notes=(*recorded.notes, f"{gate.id}: carried over from run "
                             f"{self.source_dir.name} (measured load is not replayed; the policy asks the same)"))
            for check in result.checks:
                records.write(check)
            records.write_gate(result, list(self.measured.timings.get(gate.id, ())))
            self.progress(f"gate {gate.stage} {gate.id}: {result.status.value} (carried over: measured, not replayed)")
            return result
        now = utc_now()
        check = CheckResult(id=f"{gate.id}.not_rejudged", gate=gate.id, status=Status.SKIP, blocking=True,
                            reason=f"not re-judged: this gate measures load, which a rejudge cannot replay, and {why}; "
                            f"run it again (gatekeeper run … --gates {gate.id})", finished_at=now)
        records.write(check)
        result = GateResult(id=gate.id, stage=gate.stage, title=gate.title, description=gate.description(), status=Status.SKIP,
                            checks=(check,), started_at=now)
        records.write_gate(result, [])
        self.progress(f"gate {gate.stage} {gate.id}: SKIP (not re-judged: {why})")
        return result

    def _reused_timings(self, gates: list[GateResult]) -> tuple[RequestTiming, ...]:
        return tuple(t for g in gates if g.reused for t in self.measured.timings.get(g.id, ()))


def _why_not_carried(gate_id: str, recorded: GateResult | None, original: RunPlan, plan: RunPlan) -> str | None:
    """Why a measured gate's recorded result does not answer `plan`'s question, or None when it does."""
    if recorded is None or recorded.coverage is None:  # no coverage: it was left out, not applicable, or not run
        return "the recorded run did not measure it"
    if gate_id not in original.policy.gates or original.policy.settings(gate_id) != plan.policy.settings(gate_id):
        return f"its settings in {plan.policy.path} differ from the recorded run's ({original.policy.path})"
    if original.policy.min_judged.get(gate_id) != plan.policy.min_judged.get(gate_id):
        return f"its coverage floor in {plan.policy.path} differs from the recorded run's"
    changed = [c.id for c in recorded.checks if original.policy.is_blocking(c.id) != plan.policy.is_blocking(c.id)]
    if changed:
        return f"{plan.policy.path} makes {changed[0]} {'blocking' if plan.policy.is_blocking(changed[0]) else 'advisory'}"
    return None
