"""The staged run: start targets, run the gates in stage order, decide, write reports.

The runner knows no gate by name: each gate declares what it needs (`needs_ready_targets`) and
which blocking outcomes stop the later gates (`stops_run_on`). Records are written as checks are
produced (records.jsonl), so a crash loses nothing; the final reports are written atomically at
the end. A gate that raises is an ERROR check (fail closed), and a gate that fails hard stops the
later gates, which are reported as not run. The run directory says it is incomplete until the last
report is written, and a resumed run takes the gates the interrupted one finished (run_dir.py).
Every endpoint the gates get is taped (`tape/`): what the targets answer is recorded in the run
directory for `gatekeeper rejudge` (whose runner, `rejudge.py`, overrides how targets start and
answer), and with a cache directory the reference's answers may come from the answer cache.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path

from gatekeeper.endpoints import engine_death
from gatekeeper.endpoints.client import Endpoint
from gatekeeper.errors import EndpointError
from gatekeeper.gates.interface import Gate, GateContext, RunInfo, StartupFindings, utc_now
from gatekeeper.targets.runtime import TargetRuntime
from gatekeeper.run.probed import ProbedCapabilities
from gatekeeper.gates.registry import select
from gatekeeper.report.records import RecordWriter
from gatekeeper.report.run.files import write_reports
from gatekeeper.hooks import Hook, run_hooks
from gatekeeper.results import CheckResult, GateResult, RequestTiming, RetryCount, RunResult, Status, TargetInfo, worst_status
from gatekeeper.run import liveness, next_steps, retry_check
from gatekeeper.run.liveness import ROLES, Liveness
from gatekeeper.run.run_dir import (Resumable, keep_reused_records, mark_complete, mark_incomplete, set_aside_logs,
                                write_plan)
from gatekeeper.run_plan import RunPlan
from gatekeeper.targets.interface import Started, Target, TargetSpec, stop_all
from gatekeeper.targets.served import served_model
from gatekeeper.targets import threads as engine_threads
from gatekeeper.targets.spec import make_target
from gatekeeper.tape.endpoint import TapedEndpoint
from gatekeeper.tape.session import AnswerTape
from gatekeeper.verdict import decide


class Runner:
    """Runs one plan; `progress` receives one-line status messages."""

    def __init__(self, plan: RunPlan, progress: Callable[[str], None] = lambda m: None,
                 fingerprint: Mapping[str, str] | None = None, resume: Resumable | None = None) -> None:
        self.plan = plan
        self.progress = progress
        self.fingerprint = fingerprint  # recorded in plan.json, for a later --resume
        self.resume = resume
        self.run_dir = plan.out_dir / plan.run_id
        self.targets: dict[str, Target] = {}
        self._extra: list[Endpoint] = []  # endpoints of targets a gate started
        self._launched = threading.Lock()  # a performance round's two launches come up at once
        self._retries: tuple[RetryCount, ...] = ()  # the current gate's requests and retries per target
        self._log_marks: dict[str, int] = {}  # each target's log length when the current gate began
        self._copy_deaths: dict[str, dict[str, str]] = {}  # per build, the root causes its other launches died of
        self._gate = ""  # the gate running now (the gate tag of the endpoints it launches)
        self.tape: AnswerTape | None = None  # every answer the targets give, kept (rejudge); the reference cache

    def _new_tape(self) -> AnswerTape:
        """Where this run's answers go (and where the reference's may come from)."""
        return AnswerTape(self.run_dir, self.plan.run_id,
                          Path(self.plan.reference_cache) if self.plan.reference_cache else None,
                          redact=self.plan.redactor().text)

    def _endpoint(self, role: str, base_url: str, model: str, api_key: str | None, spec: TargetSpec,
                  log_path: str | None = None) -> TapedEndpoint:
        assert self.tape is not None
        ep = self.tape.endpoint(role, base_url, model, api_key, self.plan.timeout_s, spec.key_source)
        ep.log_path = Path(log_path) if log_path else None  # a failed request's evidence quotes its lines
        return ep

    def _served_model(self, role: str, s: Started, spec: TargetSpec, target: Target) -> str:
        """The model id a started target is sent."""
        return served_model(s.base_url, spec, target.api_key()) if s.ready else (spec.model or "")

    def _start_targets(self) -> dict[str, Started]:
        started: dict[str, Started] = {}
        specs = {"reference": self.plan.reference, "candidate": self.plan.candidate}

        def start(role: str) -> None:
            self.progress(f"starting {role}: {specs[role].describe()}")
            started[role] = s = self.targets[role].start(str(self.run_dir))
            self.progress(f"{role} " + (f"ready in {s.startup_s:.1f} s" if s.ready else f"did not start: {s.error}"))

        for role in ROLES:  # made here, so a run interrupted while they come up stops both
            self.targets[role] = make_target(role, specs[role])
            if specs[role].userinfo_ignored():
                self.progress(f"{role}: the URL's user:password is not sent; the key from {specs[role].api_key_env} "
                              "goes as a Bearer token")
        threads = [threading.Thread(target=start, args=(role,), daemon=True) for role in ROLES]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        engine_threads.report({r: self.targets[r] for r in ROLES if specs[r].kind == "launch"}, self.progress)
        return started

    def run(self) -> RunResult:
        """Execute the plan; always stops what it started and writes the reports."""
        plan = self.plan
        self.run_dir.mkdir(parents=True, exist_ok=True)
        started_at = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        mark_incomplete(self.run_dir, plan.run_id, started_at)
        if self.fingerprint is not None:
            write_plan(self.run_dir, plan.run_id, self.fingerprint, plan.options, plan.sources, plan.redactor().text)
        if self.resume is not None:
            keep_reused_records(self.resume)
            set_aside_logs(self.run_dir)
            self.progress(f"resuming {self.run_dir}: {len(self.resume.gates)} finished gate(s) reused"
                          + (f" ({', '.join(self.resume.gates)})" if self.resume.gates else "")
                          + (f"; asking again: {', '.join(self.resume.redone)}" if self.resume.redone else ""))
        redactor = plan.redactor()
        records = RecordWriter(self.run_dir / "records.jsonl", redactor)
        endpoints: dict[str, TapedEndpoint] = {}
        gates: list[GateResult] = []
        infos: list[TargetInfo] = []
        self.tape = tape = self._new_tape()
        try:
            started = self._start_targets()
            specs = {"reference": plan.reference, "candidate": plan.candidate}
            runtimes: dict[str, TargetRuntime] = {}
            for role in ROLES:
                s, target, spec = started[role], self.targets[role], specs[role]
                model = self._served_model(role, s, spec, target)
                if role == "reference" and s.ready:
                    self._open_cache(s.base_url, model, spec, target)
                endpoints[role] = self._endpoint(role, s.base_url, model, target.api_key(), spec, s.log_path)
                runtimes[role] = TargetRuntime(role=role, kind=spec.kind, description=spec.describe(), startup_s=s.startup_s,
                                               dtype=spec.dtype, ready=s.ready, start_error=s.error, log_lines=target.log_lines(),
                                               alive=target.alive, has_log=target.has_log(), log_error=getattr(target, "log_error", None),
                                               assumed=spec.assumed_path())
                tape.started(role, s, model, runtimes[role])
            capabilities = ProbedCapabilities(endpoints, {r: rt.ready for r, rt in runtimes.items()}, self.progress)
            gates, found = self._run_gates(endpoints, runtimes, capabilities, records)
            probed = capabilities.probed()
            for role in ROLES:
                s, spec = started[role], specs[role]
                infos.append(TargetInfo(role=role, kind=spec.kind, description=spec.describe(), base_url=s.base_url,
                                        model=endpoints[role].model, startup_s=s.startup_s, version=found.versions.get(role),
                                        capabilities=probed.get(role), log_path=s.log_path, dtype=spec.dtype, declared=spec.declared,
                                        observed=tuple(sorted((found.observed.get(role) or {}).items()))))
        finally:
            stop_all(self.targets.values())
            for ep in [*endpoints.values(), *self._extra]:
                ep.close()
            records.close()
            tape.close()
        verdict, reasons = decide(gates, plan.restricted, next_steps.stepper(plan.policy, self.run_dir))
        hooks = run_hooks([Hook(t) for t in plan.on_rollback], verdict.value, plan.run_id, self.run_dir, list(reasons),
                          redactor)
        for h in hooks:
            self.progress(f"rollback hook {h.kind} {h.target}: {'ok' if h.ok else 'FAILED'} ({h.detail})")
        result = RunResult(
            run_id=plan.run_id,
            started_at=started_at,
            finished_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            verdict=verdict,
            reasons=tuple(reasons),
            targets=tuple(infos),
            gates=tuple(gates),
            timings=self._reused_timings(gates) + tuple(t for ep in endpoints.values() for t in ep.timings),
            policy=plan.policy.path,
            golden_sets=plan.golden_paths,
            seed=plan.seed,
            hooks=hooks,
            restricted=plan.restricted,
            reference_cache=tape.cache_stats,
            rejudged_from=self._rejudged_from(),
            redone=self.resume.redone if self.resume is not None else (),
        )
        write_reports(result, self.run_dir, redactor, plan.report_links)
        redactor.tree(self.run_dir)  # a last sweep: the logs are masked as written (targets/watchdog.py)
        mark_complete(self.run_dir)
        return result

    def _open_cache(self, base_url: str, model: str, spec: TargetSpec, target: Target) -> None:
        """Open the reference answer cache, when the plan names one, for this reference's identity."""
        if self.plan.reference_cache and self.tape is not None:
            why_not = self.tape.open_cache(base_url, model, spec, target.api_key())
            self.progress(why_not or f"reference answer cache: {self.plan.reference_cache} "
                          f"({self.tape.cache_size()} answers for this reference)")

    def _rejudged_from(self) -> str | None:
        """The run this one re-judged (None: the targets were asked)."""
        return None

    def _reused_timings(self, gates: list[GateResult]) -> tuple[RequestTiming, ...]:
        """The requests the reused gates made in the interrupted run."""
        return () if self.resume is None else tuple(t for g in gates if g.reused for t in self.resume.timings.get(g.id, ()))

    def _run_gates(self, endpoints: dict[str, TapedEndpoint], runtimes: dict[str, TargetRuntime],
                   capabilities: ProbedCapabilities, records: RecordWriter) -> tuple[list[GateResult], StartupFindings]:
        """Every gate in stage order; their results, and what gate 1 found (empty when it did not run)."""
        plan = self.plan
        results: list[GateResult] = []
        found = StartupFindings()
        run = RunInfo(seed=plan.seed, golden=plan.golden, runtimes=runtimes,
                      specs={"reference": plan.reference, "candidate": plan.candidate}, launch=self._launch,
                      process_group=self._process_group, out_dir=plan.out_dir, run_id=plan.run_id, retire=self._retire)
        stopped_by: GateResult | None = None
        selected = {g.id for g in select(plan.gates)}
        for gate_cls in select(None):
            gate = gate_cls()
            if gate.id not in selected:
                results.append(self._disabled(gate, records, excluded=f"not selected (--gates {','.join(plan.gates or ())})"))
                records.write_gate(results[-1], [])
                continue
            reused = self.resume.gates.get(gate.id) if self.resume is not None and stopped_by is None else None
            if reused is not None:
                results.append(reused)
                self.progress(f"gate {gate.stage} {gate.id}: {reused.status.value} (from the interrupted run)")
                stopped_by = reused if reused.stopped_run else None
                continue
            if gate.id not in plan.policy.enabled:
                results.append(self._disabled(gate, records))
                records.write_gate(results[-1], [])
                continue
            why_not = gate.not_applicable(plan.policy.settings(gate.id), plan)
            if why_not is not None:
                results.append(self._disabled(gate, records, why_not))
                records.write_gate(results[-1], [])
                continue
            carried = self._carried_over(gate, records, stopped_by)
            if carried is not None:
                results.append(carried)
                stopped_by = carried if carried.stopped_run and stopped_by is None else stopped_by
                continue
            ctx = GateContext(gate_id=gate.id, reference=endpoints["reference"], candidate=endpoints["candidate"], run=run,
                              settings=plan.policy.settings(gate.id), blocking_rule=plan.policy.is_blocking, capabilities=capabilities,
                              record=records.write, startup=found, earlier=tuple(results), judgement=gate.judgement, progress=self.progress)
            t0, started_at = time.perf_counter(), utc_now()
            ctx.clock.mark = t0
            coverage, self._retries = None, ()
            if stopped_by is not None:
                ctx.check("not_run", Status.SKIP, f"not run: gate {stopped_by.stage} ({stopped_by.id}) failed")
            elif gate.needs_targets(ctx.settings) and not all(rt.ready for rt in runtimes.values()):
                ctx.check("not_run", Status.SKIP, "not run: a target did not start")
            else:
                self._log_marks = {role: len(t.log_lines()) for role, t in self.targets.items()}  # where a death's story starts
                returned = self._run_one(gate, ctx, endpoints)
                found = returned if isinstance(returned, StartupFindings) else found
                coverage = ctx.coverage_check(plan.policy.min_judged.get(gate.id, gate.min_judged_share))
            lost = self._liveness(ctx, endpoints, runtimes) if stopped_by is None else False
            self._stop_extra()  # what a gate started for itself (a replica, a baseline) goes with it
            hard = lost or any(c.blocking and c.status in gate.stops_run_on and c.id not in gate.never_stops_run
                               for c in ctx.checks)
            result = GateResult(id=gate.id, stage=gate.stage, title=gate.title, description=gate.description(), coverage=coverage,
                                status=worst_status(ctx.checks), checks=tuple(ctx.checks), notes=tuple(ctx.notes), started_at=started_at,
                                duration_s=time.perf_counter() - t0, stopped_run=hard and stopped_by is None, retries=self._retries)
            results.append(result)
            records.write_gate(result, [t for ep in endpoints.values() for t in ep.timings if t.gate == gate.id])
            self.progress(f"gate {gate.stage} {gate.id}: {result.status.value}")
            if result.stopped_run:
                stopped_by = result
        return results, found

    def _carried_over(self, gate: Gate, records: RecordWriter, stopped_by: GateResult | None) -> GateResult | None:
        """A gate's result taken as it is instead of running it (a re-judged run's measured gates); None: run it."""
        return None

    def _launch(self, role: str, spec: TargetSpec) -> Endpoint:
        """Start one more target for a gate (gate 5's replica, the performance baseline), stopped
        when the gate ends; one that does not come up is an EndpointError (the gate's ERROR). Two
        threads may launch at once: only the start itself runs side by side."""
        self.progress(f"starting {role}: {spec.describe()}")
        with self._launched:
            self.targets[role] = target = make_target(role, spec)
        s = target.start(str(self.run_dir))
        if not s.ready:
            raise EndpointError("connect", s.base_url or role, f"the {role} did not start: {s.error}")
        self.progress(f"{role} ready in {s.startup_s:.1f} s")
        model = served_model(s.base_url, spec, target.api_key())
        with self._launched:
            ep = self._endpoint(role, s.base_url, model, target.api_key(), spec, s.log_path)
            if self.tape is not None:
                self.tape.started(role, s, model, None)
            ep.gate = self._gate
            self._extra.append(ep)
        return ep

    def _retire(self, role: str) -> None:
        """Stop a target a gate started (`_launch`) before the gate ends (an earlier launch round's)."""
        if role in ROLES or role not in self.targets:
            return
        self.targets.pop(role).stop()
        for ep in [e for e in self._extra if e.role == role]:
            ep.close()
            self._extra.remove(ep)

    def _process_group(self, role: str) -> int | None:
        """The process group of the target `role`, where this run launched it (for CPU time)."""
        return target.process_group() if (target := self.targets.get(role)) is not None else None

    def _stop_extra(self) -> None:
        """Stop the targets gates started (`_launch`): they must not load the machine, or hold its
        memory, while later gates measure."""
        stop_all([self.targets.pop(role) for role in [r for r in self.targets if r not in ROLES]])
        for ep in self._extra:
            ep.close()
        self._extra.clear()

    def _liveness(self, ctx: GateContext, endpoints: Mapping[str, Endpoint], runtimes: dict[str, TargetRuntime]) -> bool:
        """After a gate: is each target still there? A candidate that stopped answering (its
        process exited, or connections fail while the reference still answers) is a blocking
        FAIL `<gate>.candidate_crashed` with its log tail → ROLLBACK; a reference that stopped is
        `<gate>.reference_unusable` (ERROR → HOLD). Whether the run must stop."""
        if not all(rt.ready for rt in runtimes.values()):
            return False
        return liveness.judge(ctx, self._gone(ctx, endpoints, runtimes))

    def _gone(self, ctx: GateContext, endpoints: Mapping[str, Endpoint], runtimes: dict[str, TargetRuntime]) -> Liveness:
        """Which targets stopped answering after the gate, whose process is alive, the candidate's
        log tail when it stopped, and the engines declared dead with the log around each death
        (all recorded, for a rejudge)."""
        errors = any(c.status is Status.ERROR for c in ctx.checks)
        gone = {role: not self._answers(endpoints[role], runtimes[role], errors) for role in ROLES}
        alive = {role: runtimes[role].alive() for role in ROLES}
        target = self.targets.get("candidate")
        tail = target.log_lines()[-40:] if gone["candidate"] and target is not None else []
        died = {role: d for role in ROLES if (d := endpoints[role].streak.confirm()) is not None}
        death_log = {role: engine_death.evidence(t.log_lines(), self._log_marks.get(role, 0))
                     for role in died if (t := self.targets.get(role)) is not None}
        liveness.note_copy_deaths(self._copy_deaths, ctx.gate_id, self._extra, self.targets)
        after = Liveness(gone, alive, tail, died, death_log, {r: dict(c) for r, c in self._copy_deaths.items()})
        if self.tape is not None:
            self.tape.liveness(ctx.gate_id, after.to_json())
        return after

    @staticmethod
    def _answers(ep: Endpoint, rt: TargetRuntime, errors: bool) -> bool:
        """Whether a target still answers: its process is alive and, after a gate that had
        errors, it accepts a connection and answers (any HTTP answer to /v1/models will do; a
        connection closed without one, as a proxy in front of a dead server does, is no answer)."""
        if not rt.alive():
            return False
        if not errors:
            return True
        probe = Endpoint(ep.role, ep.base_url, ep.model, timeout_s=10.0)
        try:
            probe.get("/v1/models")
            return True
        except EndpointError as e:
            return e.kind not in ("connect", "timeout", "stream")
        finally:
            probe.close()

    def _disabled(self, gate: Gate, records: RecordWriter, not_applicable: str | None = None,
                  excluded: str | None = None) -> GateResult:
        """A gate the run leaves out (`excluded`: not selected by --gates), the policy turns off,
        or whose question does not apply to this pair: one advisory SKIP saying which, so every
        report shows it was not run. The first two make the run partial (`RunResult.partial`)."""
        now = utc_now()
        if excluded:
            name, reason = "not_selected", f"not run: {excluded}"
        elif not_applicable:
            name, reason = "not_applicable", f"not run: {not_applicable}"
        else:
            excluded = f"disabled by policy {self.plan.policy.path}"
            name, reason = "disabled", f"{excluded} (gates.{gate.id}.enabled: false)"
        check = CheckResult(id=f"{gate.id}.{name}", gate=gate.id, status=Status.SKIP, blocking=False, reason=reason, finished_at=now)
        records.write(check)
        return GateResult(id=gate.id, stage=gate.stage, title=gate.title, description=gate.description(), status=Status.SKIP,
                          checks=(check,), excluded=excluded, started_at=now)

    def _run_one(self, gate: Gate, ctx: GateContext, endpoints: dict[str, TapedEndpoint]) -> StartupFindings | None:
        """Run one gate and return what it returned; whatever it raises becomes an ERROR check
        (fail closed). The requests its targets answered with a transient failure and the client
        retried are counted in its notes."""
        returned = None
        self.progress(f"gate {gate.stage}: {gate.title}")
        self._gate = gate.id
        for ep in endpoints.values():
            ep.gate = gate.id
            ep.cacheable = gate.reference_cacheable
        try:
            returned = gate.run(ctx)
        except EndpointError as e:
            ctx.error_check("gate", e)
        except Exception as e:  # fail closed: a crashing gate is an ERROR, never a pass
            (self.run_dir / f"crash-{gate.id}.txt").write_text(traceback.format_exc())
            ctx.check("gate", Status.ERROR, f"gate crashed: {type(e).__name__}: {e}")
        counted = retry_check.count([*endpoints.values(), *self._extra], gate.id)  # recorded: a rejudge reads the run's
        self._retries = tuple(RetryCount(**c) for c in endpoints["reference"].measured(
            f"{gate.id}.retries", [dataclasses.asdict(c) for c in counted]))
        retried = [c for c in self._retries if c.retried]
        if retried:
            ctx.notes.append(f"{gate.id}: {sum(c.retried for c in retried)} request(s) retried after a transient failure ("
                             + ", ".join(f"{c.role} {c.retried} of {c.sent}" for c in retried) + ")")
        retry_check.compare(ctx, self._retries)
        return returned
