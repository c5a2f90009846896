"""Two finished runs compared: what changed from run A to run B, and whether anything got worse.

`compare_runs(a, b)` is a pure function of two `RunSummary`s (run_summary.py) to a frozen
`RunComparison`:

- **plan differences**: policy, golden sets, seed, what a partial run left out (gates not run,
  golden cases chosen by flag) and gatekeeper version, each compared as the runs recorded it.
  Runs of different plans may differ in their checks because of the plan, not because of the
  engines; every view says so first.
- **status changes**: checks in both runs whose status differs. A check left undecided counts as
  a status of its own, UNDECIDED (its recorded status is WARN). A change is *worse* when B has
  an ERROR that A had not (anything → ERROR); a FAIL that A had not (PASS → FAIL, also from
  WARN, SKIP or ERROR); an undecided check that A decided as PASS or WARN (decided → undecided;
  FAIL → undecided is not worse); or when the check alone now makes a worse verdict
  (`verdict.check_verdict`: e.g. a blocking check that passed in A is skipped in B, so B HOLDs).
- **checks only in A, only in B**. One only in B is worse when it is a blocking FAIL or an ERROR.
- **new findings**: checks that are FAIL, ERROR or undecided in B and were none of these in A
  (or were not in A).
- **metric deltas**: for checks in both, every number in their metrics (nested objects walked,
  named `outer.inner`) that differs, the checks that changed status first; lists are not
  compared, except intervals:
- **intervals**: a metric named `ci` or ending in `_ci` holding two numbers lo ≤ hi (the
  performance gate's `ci` and `noise_ci`, around its `ratio`), shown for both runs where it
  moved, with whether the two intervals overlap. Overlapping intervals do not show that the
  figure moved; disjoint ones at the gate's confidence do.

`worse` lists every change for the worse; `gatekeeper compare` exits 1 when it is not empty.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from gatekeeper.run_summary import RunSummary
from gatekeeper.results import CheckResult, Status, Verdict
from gatekeeper.verdict import check_verdict

_DECIDED_NO_REGRESSION = (Status.PASS, Status.WARN)


def status_label(c: CheckResult) -> str:
    """A check's status as the comparison counts it: UNDECIDED for a check left undecided."""
    return "UNDECIDED" if c.undecided else c.status.value


def is_finding(c: CheckResult) -> bool:
    """Whether the check is something to look at: FAIL, ERROR or undecided."""
    return c.status in (Status.FAIL, Status.ERROR) or c.undecided


@dataclass(frozen=True)
class PlanDifference:
    """One part of the plan (`plan_of`: policy, golden sets, seed, left out, gatekeeper version) the runs differ in."""

    name: str
    a: str
    b: str


@dataclass(frozen=True)
class StatusChange:
    """A check in both runs whose status differs; `worse` says why it counts as worse (None: it does not)."""

    a: CheckResult
    b: CheckResult
    worse: str | None


@dataclass(frozen=True)
class MetricDelta:
    """A number in a check's metrics that differs between the runs."""

    check_id: str
    name: str
    a: float
    b: float

    @property
    def delta(self) -> float:
        """B − A (NaN when either side is not finite)."""
        return self.b - self.a if math.isfinite(self.a) and math.isfinite(self.b) else math.nan


@dataclass(frozen=True)
class IntervalChange:
    """An interval in a check's metrics (`ci`, `noise_ci`) that moved between the runs."""

    check_id: str
    name: str
    a: tuple[float, float]
    b: tuple[float, float]

    @property
    def overlap(self) -> bool:
        """Whether the two intervals share a point."""
        return max(self.a[0], self.b[0]) <= min(self.a[1], self.b[1])


@dataclass(frozen=True)
class Worsening:
    """One change for the worse: the check and why it counts."""

    check_id: str
    why: str


@dataclass(frozen=True, kw_only=True)
class RunComparison:
    """Run B against run A (see the module docstring for each part)."""

    a: RunSummary
    b: RunSummary
    plan_differences: tuple[PlanDifference, ...]
    changed: tuple[StatusChange, ...]
    only_a: tuple[CheckResult, ...]
    only_b: tuple[CheckResult, ...]
    new_findings: tuple[CheckResult, ...]
    deltas: tuple[MetricDelta, ...]
    intervals: tuple[IntervalChange, ...]
    worse: tuple[Worsening, ...]
    num_common: int  # checks present in both runs


def compare_runs(a: RunSummary, b: RunSummary) -> RunComparison:
    """Run B compared with run A."""
    in_a, in_b = _by_id(a.checks), _by_id(b.checks)
    pairs = [(in_a[i], c) for i, c in in_b.items() if i in in_a]
    only_a = tuple(c for i, c in in_a.items() if i not in in_b)
    only_b = tuple(c for i, c in in_b.items() if i not in in_a)
    changed = tuple(StatusChange(x, y, _worse(x, y)) for x, y in pairs if status_label(x) != status_label(y))
    worse = tuple(Worsening(s.b.id, s.worse) for s in changed if s.worse) + tuple(
        Worsening(c.id, f"new in B: {'blocking' if c.blocking else 'advisory'} {status_label(c)}")
        for c in only_b if c.status is Status.ERROR or check_verdict(c) is Verdict.ROLLBACK)
    new_findings = tuple(y for i, y in in_b.items() if is_finding(y) and not (i in in_a and is_finding(in_a[i])))
    deltas: list[MetricDelta] = []
    intervals: list[IntervalChange] = []
    moved = {s.b.id for s in changed}
    for x, y in sorted(pairs, key=lambda pair: pair[1].id not in moved):  # the checks that changed status first
        deltas += _deltas(x, y)
        intervals += _intervals(x, y)
    return RunComparison(a=a, b=b, plan_differences=_plan_differences(a, b), changed=changed, only_a=only_a, only_b=only_b,
                         new_findings=new_findings, deltas=tuple(deltas), intervals=tuple(intervals), worse=worse,
                         num_common=len(pairs))


def _by_id(checks: tuple[CheckResult, ...]) -> dict[str, CheckResult]:
    """The checks by id, in run order (a repeated id keeps its first check)."""
    found: dict[str, CheckResult] = {}
    for c in checks:
        found.setdefault(c.id, c)
    return found


def _worse(a: CheckResult, b: CheckResult) -> str | None:
    """Why the change from `a` to `b` is for the worse, or None."""
    change = f"{status_label(a)} → {status_label(b)}"
    if b.status is Status.ERROR and a.status is not Status.ERROR:
        return f"{change}: could not run in B"
    if b.status is Status.FAIL and a.status is not Status.FAIL:
        return f"{change}{'' if b.blocking else ' (advisory)'}"
    if b.undecided and not a.undecided and a.status in _DECIDED_NO_REGRESSION:
        return f"{change}: decided in A, undecided in B"
    if check_verdict(b).severity > check_verdict(a).severity:
        return f"{change}: the check alone now makes the run {check_verdict(b).value}"
    return None


def plan_of(run: RunSummary) -> tuple[tuple[str, str], ...]:
    """The parts of a run's plan that a comparison checks, as (name, value) for people."""
    return (("reference", run.reference), ("policy", run.policy or "–"), ("golden sets", ", ".join(run.golden_sets) or "–"),
            ("seed", str(run.seed)),
            ("left out", "; ".join(run.left_out) or "nothing"),
            ("gatekeeper version", run.gatekeeper_version or "not recorded"))


def _plan_differences(a: RunSummary, b: RunSummary) -> tuple[PlanDifference, ...]:
    return tuple(PlanDifference(name, x, y) for (name, x), (_, y) in zip(plan_of(a), plan_of(b)) if x != y)


def _is_interval_name(name: str) -> bool:
    return name == "ci" or name.endswith("_ci")


def _walk(metrics: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Every (dotted name, value) in `metrics`, nested objects walked."""
    for key, value in metrics.items():
        if isinstance(value, Mapping):
            yield from _walk(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _interval(name: str, value: Any) -> tuple[float, float] | None:
    if not _is_interval_name(name.rpartition(".")[2]) or not isinstance(value, (list, tuple)) or len(value) != 2:
        return None
    lo, hi = _number(value[0]), _number(value[1])
    if lo is None or hi is None or math.isnan(lo) or math.isnan(hi) or lo > hi:
        return None
    return lo, hi


def _same(x: float, y: float) -> bool:
    return x == y or (math.isnan(x) and math.isnan(y))


def _deltas(a: CheckResult, b: CheckResult) -> list[MetricDelta]:
    numbers_a = {k: n for k, v in _walk(a.metrics) if (n := _number(v)) is not None}
    return [MetricDelta(b.id, k, numbers_a[k], n) for k, v in _walk(b.metrics)
            if (n := _number(v)) is not None and k in numbers_a and not _same(numbers_a[k], n)]


def _intervals(a: CheckResult, b: CheckResult) -> list[IntervalChange]:
    found_a = {k: i for k, v in _walk(a.metrics) if (i := _interval(k, v)) is not None}
    return [IntervalChange(b.id, k, found_a[k], i) for k, v in _walk(b.metrics)
            if (i := _interval(k, v)) is not None and k in found_a and found_a[k] != i]
