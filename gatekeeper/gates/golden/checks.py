"""Gate 3's checks and what each found, typed: the gate id, which checks are cases and which
their streamed variants, and one finding per check whose fields are its metric keys
(`gatekeeper/gates/finding.py`: written once, here). The gate builds each finding and hands it to
`ctx.check`, which records its `metrics()`; a reader (the correctness table, a stored summary.json) takes it back with
`TheFinding.of(check)`. Gate 5's `deterministic_probe` rule reads the canary case's id.

A case's check is `golden.<case id>`; its streamed variant `golden.<case id>.stream`; besides
the cases the gate writes `golden.coverage`, `golden.pass_rate`, `golden.candidate_repeat` and, where both
targets cut streams short, `golden.stream_cuts`. What each decides, and how, is `gate.py`'s
`GoldenGate` docstring.

A literal `golden.…` id outside this package is a test failure (tests/repo/test_contracts.py);
the findings' tests: tests/gates/golden/test_golden_findings.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gatekeeper.gates.finding import OPTIONAL, Finding, nested, nested_map
from gatekeeper.golden.assertions import DEGENERATE_OUTPUT
from gatekeeper.results import CheckResult, Status

GATE = "golden"
STREAM_SUFFIX = ".stream"
COVERAGE = f"{GATE}.coverage"
PASS_RATE = f"{GATE}.pass_rate"
CANDIDATE_REPEAT = f"{GATE}.candidate_repeat"
STREAM_CUTS = f"{GATE}.stream_cuts"
"""Both targets cut streams short at random: the candidate's rate against the reference's (stream_cuts.py)."""
CANARY_CASE = f"{GATE}.canary-ok"
"""The shipped golden set's `Reply with exactly: OK` case (golden_sets/core.yaml)."""
_NOT_CASES = (COVERAGE, PASS_RATE, CANDIDATE_REPEAT, STREAM_CUTS)


def case(case_id: str) -> str:
    """The check id of a golden case."""
    return f"{GATE}.{case_id}"


def is_streamed(check: CheckResult) -> bool:
    """A case's streamed variant (`<case>.stream`)."""
    return check.id.endswith(STREAM_SUFFIX)


def is_case(check: CheckResult) -> bool:
    """One golden case's own (non-streamed) check."""
    return check.id not in _NOT_CASES and not is_streamed(check)


def is_degenerate(check: CheckResult) -> bool:
    """A case (or stream) the candidate failed with degenerate output (repeats, garbage, nothing)."""
    return check.status is Status.FAIL and DEGENERATE_OUTPUT in check.reason


@dataclass(frozen=True, kw_only=True)
class NearTie(Finding):
    """Where the two answers part, asked again with logprobs (stats/near_tie.py): the token index,
    each side's token and its logprob gap to the other's, and the gap allowed for the dtype."""

    index: int
    reference: str
    candidate: str
    reference_gap: float | None
    candidate_gap: float | None
    max_gap: float


@dataclass(frozen=True, kw_only=True)
class CaseFinding(Finding):
    """A golden case `golden.<case id>`: its assertions and the ones the candidate failed, both
    answers' finish reasons and lengths, their similarity (and the reference's to its own second
    run), where a divergence was reviewed (`near_tie`: forgiven; `divergence`: confident), whether
    the case was judged (not both failing alike) and whether each side passed its absolute
    assertions. `forced`: a task only the candidate fails, parting at a near tie, with the
    reference's answer forced on both (gates/forcing.py): "precision flip" (it follows but for near
    ties) or "regression" (it confidently leaves it). `lost`: not asked, the candidate lost this
    feature (gate 1's finding). A key the
    check lacks (an ERROR, a stream) reads as the default: not judged, not passed."""

    assertions: int = 0
    failed: tuple[str, ...] = ()  # the assertions the candidate failed, described
    candidate_finish_reason: str | None = None
    candidate_tokens: int | None = None
    reference_finish_reason: str | None = None
    reference_tokens: int | None = None
    similarity: float | None = None
    reference_self_similarity: float | None = None  # None: one reference run
    near_tie: NearTie | None = nested(NearTie, optional=True)
    divergence: NearTie | None = nested(NearTie, optional=True)
    judged: bool = False
    candidate_passes: bool = False
    reference_passes: bool = False
    forced: str | None = field(default=None, metadata=OPTIONAL)
    lost: str | None = field(default=None, metadata=OPTIONAL)


@dataclass(frozen=True, kw_only=True)
class StreamFinding(Finding):
    """A streamed variant `golden.<case id>.stream`: the candidate's streamed answer against its
    non-streamed one, and how each target's two answers differ (`stream_quirk`; the reference's
    None where it did not stream the case)."""

    streamed_calls: int
    plain_calls: int
    streamed_finish_reason: str | None
    plain_finish_reason: str | None
    similarity: float
    stream_difference: tuple[str, ...]
    reference_stream_difference: tuple[str, ...] | None


@dataclass(frozen=True, kw_only=True)
class ReferenceFailed(Finding):
    """A case's ERROR because the reference could not answer it (or its noise-floor pass failed)."""

    error_kind: str
    role: str


@dataclass(frozen=True, kw_only=True)
class RepeatFinding(Finding):
    """`golden.candidate_repeat`: answers each side changed on a second pass, and the cases only
    the candidate changed."""

    candidate_changed: int
    reference_changed: int
    cases: int
    only_candidate: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class StreamCutsFinding(Finding):
    """`golden.stream_cuts`: streams cut short per target, and the one-sided Fisher test."""

    candidate_cut: int
    candidate_streams: int
    reference_cut: int
    reference_streams: int
    p_value: float
    alpha: float


Statuses = Mapping[str, int]  # status value → cases


@dataclass(frozen=True, kw_only=True)
class FamilyRates(Finding):
    """One family's cases, each side's pass rate over its answered cases (None: none), statuses."""

    cases: int
    candidate_pass_rate: float | None
    reference_pass_rate: float | None
    statuses: Statuses


@dataclass(frozen=True, kw_only=True)
class PassRateFinding(Finding):
    """`golden.pass_rate`: both sides' pass rates over every case and per family (pass_rates.py),
    the reference's own noise (the share of cases its two runs disagree on) and the policy's
    allowed drop; `precision_flips`: cases the candidate lost to a precision flip, counted as
    passed up to the policy's `max_precision_flips` (present when there are any)."""

    pass_rate: float | None
    reference_pass_rate: float | None
    reference_noise: float
    cases: int
    statuses: Statuses
    families: Mapping[str, FamilyRates] = nested_map(FamilyRates)
    max_pass_rate_drop: float
    precision_flips: int | None = field(default=None, metadata=OPTIONAL)
