"""The extension point for gates: a `Gate` declares its contract and runs its checks against a
`GateContext`.

A gate's contract is its class: `id`, `stage`, `title`, its docstring (the `description` the
report shows: what the gate checks, why, what a failure looks like), its typed `Settings` (a
frozen dataclass with the defaults; the policy loader builds it), `validate(settings, plan)`
(called at plan time, before any engine starts: a ConfigError there exits 3), and the run
properties the runner reads instead of knowing gates by name: `stops_run_on` (which blocking
statuses stop the later gates) and `needs_ready_targets`.

A gate never renders and never touches argv or the exit code: it reads the context (the two
endpoints, its settings, the probed capabilities, the golden sets) and reports checks through
`ctx.check(...)`, which applies the policy's blocking rule and writes the record to disk at
once, so a crash loses nothing.
"""

from __future__ import annotations

import inspect
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from gatekeeper.capabilities import Capabilities
from gatekeeper.endpoints.client import Endpoint
from gatekeeper.config.settings import NoSettings
from gatekeeper.detection import DetectionLimit, Items, rule
from gatekeeper.errors import EndpointError, gist
from gatekeeper.golden.golden_set import GoldenSet
from gatekeeper.evidence import Evidence
from gatekeeper.gates.finding import Finding, LostCapability, RefusedByBoth, RequestFailed
from gatekeeper.gates.request_evidence import request_evidence
from gatekeeper.results import CheckResult, Coverage, GateResult, Judgement, Status
from gatekeeper.reference_load import ReferenceLoad
from gatekeeper.run_plan import RunPlan
from gatekeeper.text import utc_now
from gatekeeper.targets.interface import TargetSpec
from gatekeeper.targets.runtime import TargetRuntime


@dataclass
class Tally:
    """Items a gate judged and did not judge (by reason), as the gate counts them, and the items it
    did not ask at all because neither target has a capability they need (by that capability)."""

    judged: int = 0
    unjudged: dict[str, int] = field(default_factory=dict)
    not_asked: dict[str, int] = field(default_factory=dict)
    lost_to: dict[str, int] = field(default_factory=dict)  # per reason, the failed requests that lost its items
    counted: bool = False  # the gate counted its items itself (else coverage is derived from its checks)


@dataclass
class Lap:
    """A gate's clock: a check's own time is the time since the gate's previous check was
    recorded, or since the gate started (shared by copies of the context, as `Tally` is)."""

    mark: float = field(default_factory=time.perf_counter)

    def lap(self) -> float:
        """Seconds since the previous lap (or the start), and a new mark."""
        now = time.perf_counter()
        elapsed, self.mark = now - self.mark, now
        return elapsed


@dataclass(frozen=True, kw_only=True)
class RunInfo:
    """What a gate may know of the run it is part of, fixed before the first gate starts."""

    seed: int = 0
    golden: tuple[GoldenSet, ...] = ()
    runtimes: Mapping[str, TargetRuntime] = field(default_factory=dict)  # each started target, by role
    specs: Mapping[str, TargetSpec] = field(default_factory=dict)  # each role's target as configured
    launch: Callable[[str, TargetSpec], Endpoint] | None = None  # starts one more target (stopped with the run)
    process_group: Callable[[str], int | None] = lambda role: None  # a target's process group, where this run launched it
    out_dir: Path | None = None  # where run directories go (the performance history sits beside them)
    run_id: str = ""
    retire: Callable[[str], None] = lambda role: None  # stops a target `launch` started, before the gate ends


@dataclass(frozen=True)
class StartupFindings:
    """What gate 1 found that the later gates and the report build on — gate 1's return value:
    each target's /version, the execution path each target's log and /metrics state, and the
    features the candidate lost that `startup.capabilities` reported (a later check that needs
    one points there)."""

    versions: Mapping[str, str | None] = field(default_factory=dict)
    observed: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    lost: frozenset[str] = frozenset()
    neither: frozenset[str] = frozenset()  # features neither target has, named once by `startup.capabilities`


@dataclass(frozen=True)
class Missing:
    """Why a check cannot run: a capability a target lacks. `shared`: neither target has it (the
    server's gap, not the candidate's regression: named once in gate 1, and the gates judge the rest)."""

    feature: str
    reason: str
    shared: bool


SettingsT = TypeVar("SettingsT")


@dataclass(kw_only=True)
class GateContext(Generic[SettingsT]):
    """Everything a gate may use: both endpoints, its own typed `settings`, the policy's blocking
    rule, the probed capabilities, where its checks go, the run (`run`), what gate 1 found
    (`startup`) and the earlier gates' results. A gate whose `run` takes
    `GateContext[ItsSettings]` reads `ctx.settings` as that class (a bare `GateContext` is `Any`)."""

    gate_id: str
    reference: Endpoint
    candidate: Endpoint
    settings: SettingsT
    blocking_rule: Callable[[str], bool]
    capabilities: Mapping[str, Capabilities]
    record: Callable[[CheckResult], None]
    run: RunInfo = field(default_factory=RunInfo)
    startup: StartupFindings = field(default_factory=StartupFindings)
    earlier: tuple[GateResult, ...] = ()  # the results of the gates before this one (gate 5's rules read them)
    judgement: Judgement = Judgement.EXACT  # how the gate's checks decide unless a check says otherwise
    progress: Callable[[str], None] = lambda msg: None
    checks: list[CheckResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    tally: Tally = field(default_factory=lambda: Tally())  # shared by copies of the context (dataclasses.replace)
    clock: Lap = field(default_factory=lambda: Lap())  # each check's own time (shared by copies, as the tally)

    @property
    def endpoints(self) -> dict[str, Endpoint]:
        """Both endpoints by role."""
        return {"reference": self.reference, "candidate": self.candidate}

    def check(
        self,
        name: str,
        status: Status,
        reason: str,
        finding: Finding | None = None,
        evidence: Iterable[Evidence] = (),
        family: str | None = None,
        started: float | None = None,
        judgement: Judgement | None = None,
        advisory: bool = False,
        undecided: bool = False,
        judged: Items | None = None,
        limit: DetectionLimit | None = None,
        decide: str = "",
        near_miss: bool = False,
        failed: Iterable[EndpointError] = (),
    ) -> CheckResult:
        """Record one check `<gate>.<name>` (`name` may be the whole id) with the policy's blocking
        rule applied (`advisory`: non-blocking whatever the policy says); `judgement` how it decided
        (the gate's default when None); `undecided`: asked, not answered by the evidence (WARN, not
        judged, HOLDs when blocking). `judged`: the items a count check judged, `limit` what it
        would have caught (`detection.py`; none judged is undecided, `detection.rule`), `decide`
        what would decide it if that limit is wider than the materiality; `near_miss`: it passed
        close to firing (a PROMOTE's reasons name it); `failed`: the requests whose failure
        decided it (their facts and log lines lead its evidence). Its duration is the time since `started`,
        else since the gate's previous check."""
        check_id = name if name.startswith(f"{self.gate_id}.") else f"{self.gate_id}.{name}"
        if judged is not None and limit is None:
            limit = judged.limit()
        if status in (Status.PASS, Status.WARN) and not undecided:
            ruled = rule(status is Status.PASS, reason, judged, limit, decide)
            if ruled is not None:
                status, undecided, reason, advisory = Status.WARN, True, ruled.reason, advisory or ruled.advisory
        since_last = self.clock.lap()
        result = CheckResult(
            id=check_id,
            gate=self.gate_id,
            status=status,
            blocking=self.blocking_rule(check_id) and not advisory,
            reason=reason,
            metrics={} if finding is None else finding.metrics(),
            evidence=(*request_evidence(failed), *evidence),
            family=family,
            duration_s=since_last if started is None else time.perf_counter() - started,
            judgement=judgement or self.judgement,
            undecided=undecided,
            finished_at=utc_now(),
            detection_limit=limit,
            near_miss=near_miss,
        )
        self.checks.append(result)
        self.record(result)
        return result

    def error_check(self, name: str, error: EndpointError, family: str | None = None) -> CheckResult:
        """Record a check that could not run because an endpoint failed (status ERROR)."""
        return self.check(name, Status.ERROR, str(error), RequestFailed(error_kind=error.kind, status_code=error.status), family=family,
                          failed=(error,))

    def refused_by_both(self, name: str, refusal: EndpointError, items: int = 1, family: str | None = None) -> CheckResult:
        """Record a check whose requests both targets refused alike (a feature neither serves, found at
        request time): as `skip_missing` for a shared gap, an advisory SKIP, its `items` not asked."""
        self.not_asked(f"both targets refuse the request (HTTP {refusal.status})", items)
        return self.check(name, Status.SKIP, f"not judged: both targets refuse {'these requests' if items > 1 else 'this request'} "
                          f"alike (HTTP {refusal.status}: {(gist(refusal) or refusal.detail)[:300]}): a feature neither serves",
                          RefusedByBoth(error_kind=refusal.kind, status_code=refusal.status, refused_by_both=items), family=family,
                          advisory=True)

    def skip(self, name: str, reason: str, family: str | None = None, advisory: bool = False) -> CheckResult:
        """Record a check that was not run, with its reason (SKIP)."""
        return self.check(name, Status.SKIP, reason, family=family, advisory=advisory)

    def skip_missing(self, name: str, missing: Missing, items: int = 1, family: str | None = None) -> CheckResult:
        """Record a check that cannot run for want of a capability (SKIP). One only the candidate
        lacks, or only the reference, is a SKIP the policy's blocking rule applies to, and its `items`
        count against coverage ("capability missing"); one neither target has is the server's gap,
        not the candidate's: an advisory SKIP whose items are not asked (outside coverage, which
        measures the rest)."""
        if missing.shared:
            self.not_asked(f"neither target has {missing.feature}", items)
            return self.skip(name, missing.reason, family, advisory=True)
        self.not_judged("capability missing", items)
        lost = missing.feature if self.lost(missing.feature) else None  # the candidate's regression (gate 1's finding)
        return self.check(name, Status.SKIP, missing.reason, LostCapability(lost=lost), family=family)

    def missing(self, *features: str, roles: tuple[str, ...] = ()) -> Missing | None:
        """The first of `features` a check cannot run without on `roles` (default both), or None."""
        for feature in features:
            why = self.lacks(feature, *roles)
            if why:
                return Missing(feature, why, self.neither_has(feature))
        return None

    def candidate_dtype(self) -> str:
        """The candidate's dtype (declared or observed; float32 when the run has no runtime for it)."""
        return self.run.runtimes["candidate"].dtype if "candidate" in self.run.runtimes else "float32"

    def shared_top_k(self, most: int) -> int:
        """Top logprobs to ask of both targets: `most`, or fewer where either target caps it lower."""
        caps = self.capabilities
        return min(most, caps["reference"].top_logprobs_max or most, caps["candidate"].top_logprobs_max or most)

    def neither_has(self, feature: str) -> bool:
        """Whether both targets lack `feature` by the probe's evidence (neither merely undetermined)."""
        return all(not getattr(c, feature) and not c.undetermined(feature)
                   for c in (self.capabilities["reference"], self.capabilities["candidate"]))

    def lacks(self, feature: str, *roles: str) -> str | None:
        """Why a check needing `feature` on `roles` (default both) cannot run, or None when every
        role has it. A feature the candidate lost against the reference is one finding,
        `startup.capabilities`; the reason points there instead of repeating it."""
        why = []
        for role in roles or ("reference", "candidate"):
            caps = self.capabilities[role]
            if getattr(caps, feature) or caps.undetermined(feature):
                continue  # undetermined: the checks run and judge what actually happens
            if self.neither_has(feature):
                if feature in self.startup.neither:
                    return f"needs {feature}, which neither target has: see startup.capabilities"
                return f"needs {feature}, which neither target has (capability probe: {caps.note(feature) or 'not supported'})"
            if self.lost(feature) and self.reported(feature):
                return f"needs {feature}, which the candidate lost (the reference has it): see startup.capabilities"
            if self.lost(feature):
                return (f"the candidate lacks {feature}, which the reference has (capability probe: "
                        f"{caps.note(feature) or 'not supported'})")
            why.append(f"the {role} lacks {feature} (capability probe: {caps.note(feature) or 'not supported'})")
        return "; ".join(why) or None

    def lost(self, feature: str) -> bool:
        """Whether the reference has `feature` and the candidate, by the probe's evidence, lacks it."""
        ref, cand = self.capabilities["reference"], self.capabilities["candidate"]
        return bool(getattr(ref, feature)) and not getattr(cand, feature) and not cand.undetermined(feature)

    def reported(self, feature: str) -> bool:
        """Whether gate 1 reported `feature` lost (so a check needing it points there)."""
        return feature in self.startup.lost

    def judged(self, n: int = 1) -> None:
        """Count `n` items this gate judged (compared and decided), for its coverage."""
        self.tally.counted = True
        self.tally.judged += n

    def not_asked(self, why: str, n: int) -> None:
        """Count `n` items outside coverage: a gap both targets share (`why`), not the candidate's."""
        self.tally.counted = True
        if n:
            self.tally.not_asked[why] = self.tally.not_asked.get(why, 0) + n

    def not_judged(self, reason: str, n: int = 1, requests: int | None = None) -> None:
        """Count `n` items this gate could not judge, and why (e.g. "reference fails too",
        "reference unstable", "capability missing", "request failed"); `requests`: the failed
        requests that lost them (coverage says "125 lost to 1 failed request")."""
        self.tally.counted = True
        if n:
            self.tally.unjudged[reason] = self.tally.unjudged.get(reason, 0) + n
            if requests is not None:
                self.tally.lost_to[reason] = self.tally.lost_to.get(reason, 0) + requests

    def coverage(self, min_share: float) -> Coverage:
        """What the gate judged: its own counts, or — for a gate that counts nothing itself — one
        item per check (PASS, WARN and FAIL judged; SKIP, ERROR and undecided checks not)."""
        if self.tally.counted:
            return Coverage(self.tally.judged, tuple(sorted(self.tally.unjudged.items())), min_share,
                            tuple(sorted(self.tally.not_asked.items())), tuple(sorted(self.tally.lost_to.items())))
        unjudged: dict[str, int] = {}
        for c in self.checks:
            if c.status in (Status.SKIP, Status.ERROR) or c.undecided:
                why = "undecided" if c.undecided else "skipped" if c.status is Status.SKIP else "could not run"
                unjudged[why] = unjudged.get(why, 0) + 1
        judged = sum(1 for c in self.checks if c.status in (Status.PASS, Status.WARN, Status.FAIL) and not c.undecided)
        return Coverage(judged, tuple(sorted(unjudged.items())), min_share)

    def coverage_check(self, min_share: float) -> Coverage:
        """Record `<gate>.coverage` and return the coverage it judged. Advisory by construction: a
        gate that judged too little holds the run (an advisory FAIL is HOLD), it never rolls a
        candidate back."""
        coverage = self.coverage(min_share)
        unjudged = coverage.unjudged_text()
        share = "nothing" if coverage.share is None else f"{coverage.judged} of {coverage.total} items ({coverage.share:.0%})"
        not_asked = ", ".join(f"{n} as {why}" for why, n in coverage.not_asked)
        reason = (f"judged {share}" + (f"; not judged: {unjudged}" if unjudged else "")
                  + f"; the policy's minimum is {coverage.min_share:.0%}"
                  + (f"; not asked (outside coverage): {not_asked}" if not_asked else ""))
        metrics = {"judged": coverage.judged, "total": coverage.total, "share": coverage.share,
                   "min_share": coverage.min_share, "unjudged": dict(coverage.unjudged)}
        if coverage.not_asked:
            metrics["not_asked"] = dict(coverage.not_asked)
        if coverage.lost_to:
            metrics["lost_to_failed_requests"] = dict(coverage.lost_to)
        result = CheckResult(id=f"{self.gate_id}.coverage", gate=self.gate_id, status=Status.PASS if coverage.enough else Status.FAIL,
                             blocking=False, reason=reason, metrics=metrics, judgement=Judgement.TOLERANCE)
        self.checks.append(result)
        self.record(result)
        return coverage


class Gate(ABC):
    """A staged gate. Subclasses set `id`, `stage`, `title` and `Settings`, write `run`, and say
    in their class docstring what the gate checks, why, and what a failure looks like (the
    report shows it as the gate's description)."""

    id: ClassVar[str]
    stage: ClassVar[int]
    title: ClassVar[str]
    Settings: ClassVar[type] = NoSettings
    stops_run_on: ClassVar[frozenset[Status]] = frozenset({Status.FAIL})  # a blocking check ending so stops later gates
    never_stops_run: ClassVar[frozenset[str]] = frozenset()  # check ids whose outcome never stops later gates
    min_judged_share: ClassVar[float] = 0.5  # the default floor of the gate's coverage (policy: min_judged_share)
    needs_ready_targets: ClassVar[bool] = True  # False: the gate runs (and reports) even when a target did not start
    uses_golden_sets: ClassVar[bool] = False  # True: the plan loads the golden sets for it
    judgement: ClassVar[Judgement] = Judgement.EXACT  # how its checks decide unless a check says otherwise
    reference_cacheable: ClassVar[bool] = True  # the reference's answers in this gate may come from the answer cache
    measures_machine: ClassVar[bool] = False  # its evidence is measured load, not answers: a rejudge carries it over

    @classmethod
    def description(cls) -> str:
        """What the gate checks, why, and what a failure looks like: its class docstring."""
        return inspect.getdoc(cls) or ""

    @classmethod
    def validate(cls, settings: Any, plan: RunPlan) -> None:
        """Check at plan time what the run could not recover from (ConfigError, exit 3); the
        default accepts everything the settings dataclass accepted."""
        return None

    @classmethod
    def not_applicable(cls, settings: Any, plan: RunPlan) -> str | None:
        """Why this gate's question does not apply to this pair of targets (shown as an advisory
        SKIP, as a gate the policy disables), or None. Default: it applies."""
        return None

    @classmethod
    def next_step(cls, check: CheckResult, settings: Any) -> str | None:
        """What would decide or clear a HOLD this gate's `check` caused (undecided, SKIP, ERROR),
        as the verdict's "Next:" says it, with the setting or command; None: the generic step for
        its status (gatekeeper/run/next_steps.py)."""
        return None

    @classmethod
    def reference_load(cls, settings: Any, plan: RunPlan) -> ReferenceLoad | None:
        """What the gate will send the plan's URL reference (the dry run warns of it), or None:
        it sends the reference nothing a user should be warned of."""
        return None

    @classmethod
    def needs_targets(cls, settings: Any) -> bool:
        """Whether, with these settings, the gate needs both targets up (`needs_ready_targets`
        unless a gate judges stored evidence: gate 5 on a pair store)."""
        return cls.needs_ready_targets

    @abstractmethod
    def run(self, ctx: GateContext) -> StartupFindings | None:
        """Run the checks, reporting each through `ctx.check` / `ctx.skip` / `ctx.error_check`.
        A gate returns nothing, except gate 1: what it found that later gates build on."""
