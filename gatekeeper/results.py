"""The values gates produce and reports consume: statuses, checks, gates, the whole run.

Data flows one way: gates build these (frozen) values, the verdict is computed from them, and
renderers only read them. Their JSON forms are written in one place, `report/serialise.py`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from gatekeeper import exit_codes
from gatekeeper.capabilities import Capabilities
from gatekeeper.detection import DetectionLimit
from gatekeeper.evidence import Evidence


class Status(str, Enum):
    """How a check ended. ERROR: it could not run (never counts as a pass)."""

    PASS = "PASS"
    WARN = "WARN"
    FAIL = "FAIL"
    SKIP = "SKIP"
    ERROR = "ERROR"

    @property
    def severity(self) -> int:
        """0 PASS < 1 SKIP < 2 WARN < 3 FAIL < 4 ERROR: the worse of two statuses has the higher one
        (a check that could not run is worse than one that failed: fail closed)."""
        return _BEST_FIRST.index(self)

    @staticmethod
    def worst(statuses: Iterable[Status], default: Status | None = None) -> Status:
        """The worst of `statuses` by `severity`; `default` for none (ValueError without one)."""
        if default is None:
            return max(statuses, key=lambda s: s.severity)
        return max(statuses, key=lambda s: s.severity, default=default)


_BEST_FIRST = (Status.PASS, Status.SKIP, Status.WARN, Status.FAIL, Status.ERROR)  # the one order of statuses


class Judgement(str, Enum):
    """How a check decides. EXACT: any difference from the reference (or any violation of a
    requirement) counts. TOLERANCE: a measured difference passes within a stated limit (loosened
    by the measured noise floor). STATISTICAL: a difference must exceed its limit *and* be beyond
    chance by a stated test; a gate's statistical checks share a family-wise false-alarm rate
    (Holm)."""

    EXACT = "exact"
    TOLERANCE = "tolerance"
    STATISTICAL = "statistical"


class Verdict(str, Enum):
    """What the pipeline should do with the candidate."""

    PROMOTE = "PROMOTE"
    HOLD = "HOLD"
    ROLLBACK = "ROLLBACK"

    @property
    def severity(self) -> int:
        """0 PROMOTE < 1 HOLD < 2 ROLLBACK: the worse of two verdicts has the higher one."""
        return (Verdict.PROMOTE, Verdict.HOLD, Verdict.ROLLBACK).index(self)


@dataclass(frozen=True, kw_only=True)
class CheckResult:
    """The outcome of one check: status, whether the policy makes it blocking, why, numbers."""

    id: str
    gate: str
    status: Status
    blocking: bool
    reason: str
    metrics: dict[str, Any] = field(default_factory=dict)
    evidence: tuple[Evidence, ...] = ()
    family: str | None = None
    duration_s: float = 0.0
    judgement: Judgement = Judgement.EXACT
    undecided: bool = False  # asked, but the evidence did not answer it: not judged, HOLDs when blocking
    finished_at: str = ""  # when it was recorded (ISO 8601, UTC); "" in records older than this field
    detection_limit: DetectionLimit | None = None  # what a PASS would have caught (`detection.py`)
    near_miss: bool = False  # it passed, but close to firing: a PROMOTE's reasons name it (verdict.py)


@dataclass(frozen=True)
class Coverage:
    """How much of what a gate set out to judge it did judge: `judged` items, and the items it
    could not judge by reason (both targets fail identically, reference unstable, capability
    missing, request failed...); `min_share` is the policy's floor. Items needing a capability neither
    target has are `not_asked`: named, outside the total (the gate judges the rest)."""

    judged: int
    unjudged: tuple[tuple[str, int], ...] = ()
    min_share: float = 0.0
    not_asked: tuple[tuple[str, int], ...] = ()  # items outside coverage: they need a capability neither target has
    lost_to: tuple[tuple[str, int], ...] = ()  # per unjudged reason, the failed requests that lost its items

    def unjudged_text(self) -> str:
        """The unjudged items by reason, e.g. "125 lost to 1 failed request, 2 reference unstable"."""
        lost = dict(self.lost_to)
        return ", ".join(f"{n} lost to {lost[why]} failed request{'s' if lost[why] != 1 else ''}" if why in lost
                         else f"{n} {why}" for why, n in self.unjudged)

    @property
    def total(self) -> int:
        """Items judged or not."""
        return self.judged + sum(n for _, n in self.unjudged)

    @property
    def share(self) -> float | None:
        """The judged share (None when the gate had nothing to judge)."""
        return self.judged / self.total if self.total else None

    @property
    def enough(self) -> bool:
        """Whether the judged share reaches the floor (nothing judged is never enough)."""
        return self.share is not None and self.judged > 0 and self.share >= self.min_share - 1e-12


@dataclass(frozen=True)
class RetryCount:
    """One target's requests in one gate and the retries the client made for them
    (gatekeeper/endpoints/retry.py): `retried` of any cause, `reconnected` of those after a
    connection closed before any answer, `rate_limited` of those after a 429 (a quota the server
    states, waited out as it asks: counted, never compared as a failure)."""

    role: str
    sent: int
    retried: int
    reconnected: int
    rate_limited: int = 0  # recordings made before it was counted have none

    @property
    def transient(self) -> int:
        """Retries after a failure (a 502/503/504 or a connection closed before any answer), not a rate limit."""
        return self.retried - self.rate_limited


def worst_status(checks: list[CheckResult] | tuple[CheckResult, ...]) -> Status:
    """A group's status (a gate's, a report row's): its worst check. An advisory SKIP (a question
    not asked, counted outside coverage: neither target has the capability, both refuse alike) does
    not turn checks that judged into a SKIP; a blocking SKIP does, and so does a group of SKIPs only
    (or none at all)."""
    counted = [c.status for c in checks if c.status != Status.SKIP or c.blocking] or [Status.SKIP]
    return Status.worst(counted)


@dataclass(frozen=True, kw_only=True)
class GateResult:
    """One gate's checks. `status` is `worst_status` of them; `stopped_run` marks a hard
    failure that stops the later gates."""

    id: str
    stage: int
    title: str
    description: str
    status: Status
    checks: tuple[CheckResult, ...]
    duration_s: float = 0.0
    stopped_run: bool = False
    notes: tuple[str, ...] = ()
    coverage: Coverage | None = None  # None: the gate did not run (disabled, stopped, or a target did not start)
    reused: bool = False  # taken from the records of the interrupted run this one resumed (run_dir.py)
    excluded: str | None = None  # why the run left this gate out (not selected by --gates, disabled by the policy)
    started_at: str = ""  # when it started (ISO 8601, UTC); "" for a gate not run and in older records
    retries: tuple[RetryCount, ...] = ()  # per target, for a gate that ran (older records: none)


@dataclass(frozen=True)
class RequestTiming:
    """Latency of one request as the client saw it (streaming requests give TTFT)."""

    target: str  # "reference" | "candidate"
    gate: str
    e2e_s: float
    ttft_s: float | None
    output_tokens: int


@dataclass(frozen=True, kw_only=True)
class TargetInfo:
    """What a target was and how it started."""

    role: str  # "reference" | "candidate"
    kind: str  # "bundled" | "url" | "launch"
    description: str
    base_url: str
    model: str
    startup_s: float | None = None
    version: str | None = None  # what /version answered (gate 1 reads it); None when not read
    capabilities: Capabilities | None = None  # None when the target was not probed
    log_path: str | None = None
    dtype: str = "float32"  # the dtype its tolerances assume (declared, or the bundled engine's option)
    declared: tuple[tuple[str, str], ...] = ()  # the execution path the user declared (dtype, tp, label.*...)
    observed: tuple[tuple[str, str], ...] = ()  # the path its log and /metrics state (dtype, kv_cache_dtype, tp...)


@dataclass(frozen=True)
class CacheUse:
    """How the reference answer cache served a run (gatekeeper/tape/cache.py)."""

    identity: str  # the reference's identity, described
    requests: int  # cacheable reference requests the run made
    hits: int  # answered from the cache
    stored: int  # new answers the run stored

    @property
    def line(self) -> str:
        """One line for the console and the reports."""
        rate = f" ({self.hits / self.requests:.0%})" if self.requests else ""
        return (f"reference answer cache: {self.hits} of {self.requests} cacheable reference requests answered from "
                f"the cache{rate}, {self.stored} new answers stored; identity {self.identity}")


@dataclass(frozen=True)
class RunResult:
    """Everything a run produced; the single input of every report renderer."""

    run_id: str
    started_at: str
    finished_at: str
    verdict: Verdict
    reasons: tuple[str, ...]
    targets: tuple[TargetInfo, ...]
    gates: tuple[GateResult, ...]
    timings: tuple[RequestTiming, ...] = ()
    policy: str = ""
    golden_sets: tuple[str, ...] = ()
    seed: int = 0
    hooks: tuple[Any, ...] = ()  # HookOutcome per rollback hook that ran (gatekeeper/hooks.py)
    restricted: tuple[str, ...] = ()  # what the run's flags left out within its gates (--cases, --limit)
    reference_cache: CacheUse | None = None  # how the reference answer cache served the run (None: not used)
    rejudged_from: str | None = None  # the run whose recorded answers this one judged (gatekeeper rejudge)
    redone: tuple[str, ...] = ()  # gates a resumed finished run asked again (`--resume RUN --redo GATE`)

    @property
    def partial(self) -> tuple[GateResult, ...]:
        """The gates this run left out (by --gates or the policy): its verdict does not cover them."""
        return tuple(g for g in self.gates if g.excluded is not None)

    @property
    def is_partial(self) -> bool:
        """The run left gates out, or asked fewer questions within a gate than its policy (--cases, --limit)."""
        return bool(self.partial or self.restricted)

    @property
    def unjudged(self) -> tuple[GateResult, ...]:
        """Gates the run did not leave out that judged nothing that blocks (every check skipped or
        advisory: the performance gate with no baseline for a URL candidate against the bundled
        reference): a PROMOTE's headline names them, since it answers nothing for them."""
        return tuple(g for g in self.gates if g.excluded is None and g.checks and not any(
            c.blocking and not c.undecided and c.status in (Status.PASS, Status.WARN, Status.FAIL) for c in g.checks))

    @property
    def headline(self) -> str:
        """The verdict as every report's headline shows it: "PROMOTE", or for a run that left gates
        out "PROMOTE (partial: 2 of 6 gates ran)", for one that chose fewer cases "PROMOTE (partial:
        golden cases chosen by --cases json-*)"; a PROMOTE names the gates that judged nothing
        ("PROMOTE (performance not judged: no performance baseline …)")."""
        ran = len(self.gates) - len(self.partial)
        said = ([f"{ran} of {len(self.gates)} gates ran"] if self.partial else []) + list(self.restricted)
        head = self.verdict.value + (f" (partial: {'; '.join(said)})" if said else "")
        if self.verdict is Verdict.PROMOTE and self.unjudged:
            head += " (" + "; ".join(f"{g.id} not judged: {_why(g)}" for g in self.unjudged) + ")"
        return head

    @property
    def exit_code(self) -> int:
        """The documented process exit code for this verdict."""
        return exit_codes.FOR_VERDICT[self.verdict.value]


def _why(gate: GateResult) -> str:
    """Why a gate judged nothing, from its first check ("not run: " / "not judged: " dropped), short."""
    reason = gate.checks[0].reason.removeprefix("not run: ").removeprefix("not judged: ")
    return reason if len(reason) <= 100 else reason[:99] + "…"


__all__ = ["CacheUse", "CheckResult", "Coverage", "Evidence", "GateResult", "RequestTiming", "RunResult", "Status", "TargetInfo", "Verdict"]
