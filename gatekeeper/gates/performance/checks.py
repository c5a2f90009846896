"""The performance gate's checks and findings that other code reads (performance.html's table, the
correctness report that leaves this gate out): the gate id, its checks' ids, and what each check
found, typed (`finding.py`: a finding's fields are its metric keys, written once here). A literal
`performance.…` check id outside this package is a test failure (tests/repo/test_contracts.py).

The gate builds each finding and hands it to `ctx.check`, which records its `metrics()`; a reader takes it back with
`TheFinding.of(check)`. The checks themselves (what each decides, and how) are described in
`gate.py`'s `PerformanceGate` docstring; the findings' tests: tests/gates/performance/test_perf_findings.py.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gatekeeper.gates.finding import KEY, OPTIONAL, PAIR, Finding, nested
from gatekeeper.results import CheckResult

GATE = "performance"
MEASUREMENT = f"{GATE}.measurement"  # how the load was run: pairs, the baseline, per-level figures
CAPACITY = f"{GATE}.capacity"  # the knee of each side's latency curve and the cost per 1,000 requests
PRIMARY = f"{GATE}.primary"  # the pre-registered decode figure, decided at the materiality in launch rounds
ERRORS = f"{GATE}.errors_under_load"  # the candidate's failed requests under load against the baseline's
HISTORY = f"{GATE}.history"  # the run appended to the performance history, and the drift across runs
NOT_RUN = f"{GATE}.not_run"  # not measured: correctness did not pass
_COMPARISON = re.compile(rf"^{re.escape(GATE)}\.c\d+\.")


def comparison(level: int, metric: str) -> str:
    """The check id of a guardrail: `metric` at concurrency `level`, e.g. "performance.c4.tpot_p50_s"."""
    return f"{GATE}.c{level}.{metric}"


def is_comparison(check: CheckResult) -> bool:
    """A guardrail's check (`comparison`)."""
    return bool(_COMPARISON.match(check.id))


Pair = tuple[float, float]
Figures = Mapping[str, float]  # a side's figures (perf/figures.py's keys), each the mean over its blocks


@dataclass(frozen=True, kw_only=True)
class ComparisonFinding(Finding):
    """A guardrail `performance.c<N>.<metric>`: one budgeted figure at one concurrency, the
    candidate's blocks against the baseline's in counterbalanced pairs (perf/compare.py).
    Ratios are candidate / baseline; without `pairs` nothing was compared (the measurement was
    not valid) and only the level and metric are written."""

    level: int | None = field(default=None, metadata=KEY)
    metric: str | None = field(default=None, metadata=KEY)
    pairs: int | None = None
    baseline: float | None = None  # the baseline's mean over its blocks
    candidate: float | None = None
    ratio: float | None = None
    ci: Pair | None = field(default=None, metadata=PAIR)  # the ratio's interval at `confidence`
    confidence: float | None = None
    noise_ratio: float | None = None  # the baseline's blocks against each other: the noise floor
    noise_ci: Pair | None = field(default=None, metadata=PAIR)
    budget: float | None = None  # the regression the policy allows, as a fraction
    threshold: float | None = None  # the material threshold used: the budget, or the noise floor's drift
    p_worse: float | None = None  # one-sided p that the candidate is worse, before Holm
    p_worse_holm: float | None = None  # after Holm within the family (None: not judged)
    worse_by: float | None = None  # how much worse the candidate is, as a fraction (negative: better)
    baseline_blocks: tuple[float | None, ...] = ()  # each block's figure in pair order (None: left out)
    candidate_blocks: tuple[float | None, ...] = ()

    def complete(self) -> bool:
        """Compared (else the measurement was not valid)."""
        return self.pairs is not None


@dataclass(frozen=True, kw_only=True)
class PrimaryNoise(Finding):
    """The in-run χ² test of the launch rounds' spread against the τ assumed or calibrated."""

    q: float
    df: int
    p: float
    tau_measured: float
    tau_assumed: float


@dataclass(frozen=True, kw_only=True)
class PrimaryFinding(Finding):
    """`performance.primary`: the pre-registered figure at concurrency `level`, decided by a
    sequential test over launch rounds (perf/sequential.py). Without `rounds` nothing was
    decided (not judged, or no comparable pair) and only the metric is written."""

    metric: str | None = field(default=None, metadata=KEY)
    level: int | None = None
    baseline: float | None = None  # each side's mean over the rounds' blocks
    candidate: float | None = None
    materiality: float | None = None
    alpha: float | None = None  # the false-FAIL rate the design allows
    power: float | None = None
    rounds: int | None = None
    min_rounds: int | None = None
    max_rounds: int | None = None
    ratio: float | None = None  # candidate / baseline
    ci: Pair | None = field(default=None, metadata=PAIR)
    confidence: float | None = None
    llr: float | None = None  # the log-likelihood ratio after the last round
    boundaries: tuple[float, ...] = ()  # (PASS at, FAIL at)
    sigma_round: float | None = None  # the per-round sd used
    sigma_model: float | None = None  # the per-round sd τ and the pairs imply
    pair_sd: float | None = None
    fixed_design_detectable: float | None = None
    round_ratios: tuple[float, ...] = ()
    pairs_per_round: tuple[int, ...] = ()
    launched_first: tuple[str, ...] = ()  # per round, the side launched first
    tau_source: str | None = None  # "calibrated" or "assumed"
    noise: PrimaryNoise | None = nested(PrimaryNoise)  # None before two rounds

    def complete(self) -> bool:
        """Decided in launch rounds (else not judged, or nothing comparable)."""
        return self.rounds is not None


@dataclass(frozen=True, kw_only=True)
class QuietWaits(Finding):
    """The waits for the other side to go quiet before each block (`perf/quiet.py`)."""

    blocks: int
    median_s: float
    total_s: float
    not_quiet: int  # the waits that gave up with the other side still busy


@dataclass(frozen=True, kw_only=True)
class MeasurementFinding(Finding):
    """`performance.measurement`: how the load was run, and each side's figures per level (the
    means over its blocks, `c<N>` → side → figure), which the report shows beside the judged
    ones. `client_paced_pairs` and `unquiet_pairs` are left out where the baseline failed."""

    baseline: str = ""  # what the candidate was measured against
    lateness_p99_s: float | None = None
    baseline_failed_requests: int | None = None
    empty_answers: Mapping[str, int] = field(default_factory=dict)  # per side: answers without a token
    figures: Mapping[str, Mapping[str, Figures]] = field(default_factory=dict)
    requests_per_side: Mapping[str, int] = field(default_factory=dict)
    output_lengths_controlled: bool | None = None  # ignore_eos sent
    source: str | None = None  # the workload's source
    input_sizing: str | None = None  # how input lengths were sized (calibrated or assumed tokens per word)
    levels: tuple[int, ...] = ()
    pairs: Mapping[str, int] = field(default_factory=dict)  # per `c<N>`: block pairs
    quiet_waits: QuietWaits | None = nested(QuietWaits, optional=True)
    client_paced_pairs: int | None = field(default=None, metadata=OPTIONAL)
    unquiet_pairs: int | None = field(default=None, metadata=OPTIONAL)


@dataclass(frozen=True, kw_only=True)
class ErrorsFinding(Finding):
    """`performance.errors_under_load`: each side's failed requests under load (errors_check.py)."""

    candidate_failed: int
    baseline_failed: int
    candidate_requests: int
    baseline_requests: int
    p: float | None  # the one-sided Fisher exact test's (None where it was not needed)
    examples: tuple[str, ...] = ()  # the candidate's first few failures


@dataclass(frozen=True, kw_only=True)
class SloLimits(Finding):
    """The SLOs a capacity sweep's levels must meet (None: no limit)."""

    ttft_p95_s: float | None = None
    tpot_p95_s: float | None = None


@dataclass(frozen=True, kw_only=True)
class CapacityFinding(Finding):
    """`performance.capacity`: each side's knee under the SLOs ("none": not even the lowest
    level), the cost per 1,000 requests there, and the sweep's points (capacity.py)."""

    slo: SloLimits | None = nested(SloLimits)
    knee: Mapping[str, str] = field(default_factory=dict)  # per side: the concurrency, or "none"
    cost_per_1000: Mapping[str, float | None] = field(default_factory=dict)  # per side, in the policy's unit
    price_per_accelerator_hour: float | None = None
    accelerators: int = 1
    sweep: Mapping[str, Sequence[Mapping[str, object]]] = field(default_factory=dict)  # per side: each level's figures
    single_measurement: bool = True  # one block per side per level: no interval


@dataclass(frozen=True, kw_only=True)
class HistoryFinding(Finding):
    """`performance.history`: the history file, its runs, and the change points found in it
    (figure, change) — runs and change points only where the file could be read."""

    path: str
    runs: int | None = field(default=None, metadata=OPTIONAL)
    change_points: tuple[tuple[str, str], ...] | None = field(default=None, metadata=OPTIONAL)


def figure_of(check: CheckResult) -> ComparisonFinding | PrimaryFinding | None:
    """The compared figure of a guardrail or of the primary check (None for the other checks)."""
    if check.id == PRIMARY:
        return PrimaryFinding.of(check)
    return ComparisonFinding.of(check) if is_comparison(check) else None
