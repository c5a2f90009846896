"""Gate 5's checks and what each found, typed: which checks are rules and stages (the
correctness table, the Markdown summary read them) and one finding per check whose fields are its
metric keys (`gatekeeper/gates/finding.py`: written once, here). The gate builds each finding and
hands it to `ctx.check`, which records its `metrics()`; a reader (the correctness table's shadow row, a stored summary.json)
takes it back with `TheFinding.of(check)`.

`shadow.traffic` is what was loaded (`TrafficFinding`); each canary stage is a check
`shadow.stage.<name>` (`StageFinding`: its replay, latency and every slice's measures, the
statistics of `gatekeeper/traffic/analysis.py` as found), each rollback rule a check
`shadow.rule.<name>` (`RuleFinding`), and `shadow.near_miss` lists the sequential tests that passed
close to firing (`NearMissFinding`).

A literal `shadow.…` id outside this package is a test failure (tests/repo/test_contracts.py);
the findings' tests: tests/gates/shadow/test_shadow_findings.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Self

from gatekeeper.gates.finding import OPTIONAL, Finding, nested_map, nested_tuple
from gatekeeper.results import CheckResult
from gatekeeper.traffic.analysis import MetricResult, SliceResult

GATE = "shadow"
RULE_PREFIX = f"{GATE}.rule."
STAGE_PREFIX = f"{GATE}.stage."
NEAR_MISS = f"{GATE}.near_miss"
"""An advisory WARN: sequential tests that passed close to firing (near_miss.py)."""
DISAGREEMENT = "disagreement"
"""The measure of answers that differ from the reference's beyond a near tie (traffic/measures.py)."""


def rule(name: str) -> str:
    """The check id of a rollback rule."""
    return RULE_PREFIX + name


def stage(name: str) -> str:
    """The check id of a canary stage."""
    return STAGE_PREFIX + name


def is_rule(check: CheckResult) -> bool:
    """A rollback rule's check."""
    return check.id.startswith(RULE_PREFIX)


def is_stage(check: CheckResult) -> bool:
    """A canary stage's check."""
    return check.id.startswith(STAGE_PREFIX)


@dataclass(frozen=True, kw_only=True)
class TrafficFinding(Finding):
    """`shadow.traffic`: the requests loaded, the bad lines skipped, and the requests per tenant and per kind."""

    requests: int
    skipped: int
    tenants: Mapping[str, int]
    kinds: Mapping[str, int]


@dataclass(frozen=True, kw_only=True)
class MeasureFinding(Finding):
    """One measure of one slice (`traffic/analysis.py`'s `MetricResult`): `label` Pass / High /
    Low / Nodata / Fired, the candidate's and the twin's rates over the eligible pairs, the test's
    p-value, e-value and effect, when it fired, and for a critical measure its anytime upper bound,
    the materiality and its share of alpha."""

    name: str
    critical: bool
    label: str
    candidate_rate: float | None = None
    twin_rate: float | None = None
    eligible: int = 0
    p_value: float | None = None
    e_value: float | None = None
    effect: float | None = None
    fired_at: int | None = None
    upper: float | None = None
    materiality: float | None = None
    alpha: float | None = None

    @classmethod
    def measured(cls, m: MetricResult, **more: Any) -> Self:
        """The finding of one analysed measure (`more`: the fields a subclass adds)."""
        return cls(name=m.name, critical=m.critical, label=m.label, candidate_rate=m.candidate_rate, twin_rate=m.twin_rate,
                   eligible=m.eligible, p_value=m.p_value, e_value=m.e_value, effect=m.effect, fired_at=m.fired_at,
                   upper=m.upper, materiality=m.materiality, alpha=m.alpha, **more)


@dataclass(frozen=True, kw_only=True)
class SliceFinding(Finding):
    """One slice of the traffic (`all`, a tenant, a kind...): its pairs, those judged, why the
    others were not, its score and its measures (written under the key `metrics`)."""

    slice: str
    pairs: int
    judged: int
    unjudged: Mapping[str, int]
    score: float
    measures: tuple[MeasureFinding, ...] = nested_tuple(MeasureFinding, written_as="metrics")

    @classmethod
    def analysed(cls, sl: SliceResult) -> SliceFinding:
        """The finding of one analysed slice."""
        return cls(slice=sl.key, pairs=sl.pairs, judged=sl.judged, unjudged=dict(sl.unjudged), score=sl.score,
                   measures=tuple(MeasureFinding.measured(m) for m in sl.metrics))


@dataclass(frozen=True, kw_only=True)
class Latency(Finding):
    """p50 / p95 end-to-end latency of one side's answers in a stage (None: no answer)."""

    p50: float | None
    p95: float | None


@dataclass(frozen=True, kw_only=True)
class StageFinding(Finding):
    """A canary stage `shadow.stage.<name>`: the requests replayed of those planned (fewer when a
    measure fired), its score, the measures that fired (`slice:measure`), the concurrency, each
    side's latency, and every slice as analysed after the stage. A skipped stage reads no slices."""

    requests: int = 0
    planned: int = 0
    stopped_early: bool = False
    score: float | None = None
    fired: tuple[str, ...] = ()
    concurrency: int | None = None
    latency_s: Mapping[str, Latency] = nested_map(Latency)
    slices: tuple[SliceFinding, ...] = nested_tuple(SliceFinding)

    def overall(self, measure: str) -> MeasureFinding | None:
        """A measure over all of the stage's traffic (the `all` slice; None: not measured)."""
        everything = next((s for s in self.slices if s.slice == "all"), None)
        return next((m for m in everything.measures if m.name == measure), None) if everything else None

    def disagreement(self) -> MeasureFinding | None:
        """The share of answers that differ beyond a near tie over all of the stage's traffic, for
        the candidate and for the reference's own second run (None: not measured)."""
        return self.overall(DISAGREEMENT)


@dataclass(frozen=True, kw_only=True)
class Where(Finding):
    """The slice a measure was measured in."""

    slice: str


@dataclass(frozen=True, kw_only=True)
class NearMissMeasure(MeasureFinding, Where):
    """A measure that passed close to firing, its slice first."""


@dataclass(frozen=True, kw_only=True)
class NearMissFinding(Finding):
    """`shadow.near_miss`: every sequential test that passed close to firing (near_miss.py)."""

    near_misses: tuple[NearMissMeasure, ...] = nested_tuple(NearMissMeasure)


@dataclass(frozen=True, kw_only=True)
class RuleFinding(Finding):
    """A rollback rule `shadow.rule.<name>`: its name; for `task_success_down` each task check's
    failures (candidate / twin), for `answers_differ` why differing answers were forgiven (the
    candidate's and the twin's) or stand; pairs that would decide an undecided rule."""

    rule: str
    failed_checks: Mapping[str, Mapping[str, int]] | None = field(default=None, metadata=OPTIONAL)
    forgiven: Mapping[str, int] | None = field(default=None, metadata=OPTIONAL)
    stands: Mapping[str, int] | None = field(default=None, metadata=OPTIONAL)
    twin_forgiven: Mapping[str, int] | None = field(default=None, metadata=OPTIONAL)
    pairs_to_decide: int | None = field(default=None, metadata=OPTIONAL)
