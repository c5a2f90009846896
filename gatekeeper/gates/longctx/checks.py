"""Gate 4's checks and what each found, typed: the gate id, its checks' ids, and one finding per
check whose fields are its metric keys (`gatekeeper/gates/finding.py`: written once, here). The
gate builds each finding and hands it to `ctx.check`, which records its `metrics()`; a reader (the correctness table, a stored
summary.json) takes it back with `TheFinding.of(check)`. The checks themselves (what each
decides, and how) are described in `gate.py`'s `LongContextGate` docstring.

A literal `longctx.…` id outside this package is a test failure (tests/repo/test_contracts.py);
the findings' tests: tests/gates/longctx/test_longctx_findings.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Self

from gatekeeper.gates.finding import KEY, Finding

GATE = "longctx"
NEEDLE_GRID = f"{GATE}.needle_grid"
BLOCK_BOUNDARY = f"{GATE}.block_boundary"
COLD_WARM = f"{GATE}.prefix_cache.cold_warm"
SHARED_PREFIX = f"{GATE}.prefix_cache.shared_prefix"
JSON_SCHEMA = f"{GATE}.json_schema"
TOOL_CALLS = f"{GATE}.tool_calls"
TOOL_STREAM = f"{GATE}.tool_stream"
TOOL_RESULT = f"{GATE}.tool_result"
SESSION_DECAY = f"{GATE}.session_decay"
SESSION_RECALL = f"{GATE}.session_recall"
SESSION_AGREEMENT = f"{GATE}.session_agreement"
TRIGGER_CONDITIONS = f"{GATE}.trigger_conditions"
BATCH_FEATURES = f"{GATE}.batch_features"
NAN_INF = f"{GATE}.nan_inf"
METRICS = f"{GATE}.metrics"
JSON_CHECKS = (JSON_SCHEMA,)
"""The checks that judge JSON output (what a path record calls its JSON probe)."""
TOOL_CHECKS = (TOOL_CALLS, TOOL_STREAM, TOOL_RESULT)
"""The checks that judge tool calling."""

ByLength = Mapping[str, int]  # per prompt length (its tokens, as a string): a count


@dataclass(frozen=True, kw_only=True)
class NeedleGridFinding(Finding):
    """`longctx.needle_grid`: cells in the length × depth grid, the cells each side recalled, the
    cells judged (the rest: both fail alike, the reference unstable, a near tie, refused by both),
    and where the regressions sit. A count the check lacks (an ERROR) reads as 0."""

    cells: int = 0
    judged: int = 0
    regressions: int = 0  # cells the reference answers and the candidate does not (or a differing both-fail)
    reference_unstable: int = 0  # cells the reference answers differently on its second pass
    both_fail: int = 0
    both_fail_differs: int = 0  # of those, the candidate's answer differs from the reference's repeatable one
    limit: int = 0  # the policy's needle_max_regressions
    near_ties: int = 0
    missed_at_near_tie: int = 0  # cells only the candidate misses, parting at a near tie (then forced: forced.py)
    precision_flips: int = 0  # of those, the candidate follows the reference's answer when it is forced
    forced_departures: int = 0  # of those, it confidently leaves it when forced: regressions (counted in them)
    precision_flip_limit: int = 0  # the policy's needle_max_precision_flips
    confident_divergences: int = 0
    reference_pass: int = 0
    candidate_pass: int = 0
    longest_candidate_pass: int = 0  # the longest prompt (tokens) the candidate answers
    lengths: tuple[int, ...] = ()  # the rows' prompt lengths in tokens
    depths: tuple[float, ...] = ()
    regressions_by_length: ByLength = field(default_factory=dict)
    differ_by_length: ByLength = field(default_factory=dict)  # cells whose answers differ at all
    exact_lengths: bool = True  # every prompt padded to its length exactly
    refused_by_both: int = 0


@dataclass(frozen=True, kw_only=True)
class BoundaryFinding(Finding):
    """`longctx.block_boundary`: prompts of B·k−1, B·k and B·k+1 tokens, the answers that differ
    from the reference's (beyond its own noise and near ties)."""

    lengths: tuple[int, ...]
    mismatches: int
    block_size: int
    exact_lengths: bool
    refused_by_both: int


@dataclass(frozen=True, kw_only=True)
class ColdWarmFinding(Finding):
    """`longctx.prefix_cache.cold_warm`: one prompt asked cold and warm of the candidate, and of the
    reference: the three answers, and the warm request's cached tokens (None: not observable)."""

    tokens: int
    warm_cached_tokens: int | None
    reference: str
    cold: str
    warm: str


@dataclass(frozen=True, kw_only=True)
class SharedPrefixFinding(Finding):
    """`longctx.prefix_cache.shared_prefix`: questions on one long prefix among unrelated prompts."""

    mismatches: int
    requests: int
    shared: int  # the questions sharing the prefix
    candidate_recalled: int  # of their secrets, the ones the candidate recalled
    refused_by_both: int


@dataclass(frozen=True, kw_only=True)
class ToolCallsFinding(Finding):
    """`longctx.tool_calls`: tool-call cases after a long chat."""

    cases: int
    regressions: int
    malformed: int  # calls only the candidate breaks
    both_fail: int
    both_fail_differs: int
    near_ties: int  # cases only the candidate fails, parting at a near tie (then forced: forcing.py)
    precision_flips: int = 0  # of those, the candidate follows the reference's answer when it is forced
    precision_flip_limit: int = 0  # the policy's tool_max_precision_flips


@dataclass(frozen=True, kw_only=True)
class ToolResultFinding(Finding):
    """`longctx.tool_result`: the final answer after a tool result, expected and each side's."""

    expected: str
    reference: str
    candidate: str
    both_fail: str | None  # how both missing it compares (both_fail.Outcome's text), None: not both
    near_tie: bool  # only the candidate misses it, parting at a near tie (then forced: forcing.py)
    precision_flip: bool = False  # and forced, the candidate follows the reference's answer


@dataclass(frozen=True, kw_only=True)
class ToolStreamFinding(Finding):
    """`longctx.tool_stream`: the candidate's streamed tool-call answers against its non-streamed ones."""

    cases: int
    differ: int
    differ_both_fail: int  # differing where both targets fail the case: not judged


@dataclass(frozen=True, kw_only=True)
class JsonSchemaFinding(Finding):
    """`longctx.json_schema`: answers to a JSON schema after a long chat."""

    cases: int
    regressions: int
    invalid_json: int  # answers only the candidate breaks as JSON
    both_fail: int
    both_fail_differs: int
    near_ties: int  # cases only the candidate fails, parting at a near tie (then forced: forcing.py)
    refused_by_both: int
    precision_flips: int = 0  # of those, the candidate follows the reference's answer when it is forced
    precision_flip_limit: int = 0  # the policy's tool_max_precision_flips


@dataclass(frozen=True, kw_only=True)
class DecayFinding(Finding):
    """`longctx.session_decay`: the candidate's recall slope against the reference's over the
    sessions' rounds (decay.py), the test, SQDR per side, and the curves."""

    excess_slope: float  # mean per-session (reference slope − candidate slope)
    limit: float
    p_value: float
    p_holm: float
    alpha: float
    sessions: int
    one_cell: float  # the most one (session, round) cell moves the mean slope
    reference_slopes: tuple[float, ...]
    candidate_slopes: tuple[float, ...]
    sqdr_reference: float
    sqdr_candidate: float
    sqdr_excess: float
    regressions: int
    improvements: int
    cells: int
    reference_by_round: tuple[float, ...]
    candidate_by_round: tuple[float, ...]


@dataclass(frozen=True, kw_only=True)
class SessionsSetAside(Finding):
    """`longctx.session_decay` as an ERROR: too few sessions left after failed requests; the first
    failure's kind and side."""

    error_kind: str
    role: str
    sessions_set_aside: int


@dataclass(frozen=True, kw_only=True)
class RecallFinding(Finding):
    """`longctx.session_recall`: the candidate's recall against the reference's, per session."""

    recall_drop: float  # mean per-session (reference recall − candidate recall)
    limit: float
    p_value: float
    p_holm: float
    alpha: float
    sessions: int
    one_cell: float
    reference_recall: tuple[float, ...]
    candidate_recall: tuple[float, ...]


@dataclass(frozen=True, kw_only=True)
class AgreementFinding(Finding):
    """`longctx.session_agreement`: session answers that differ from the reference's."""

    disagreements: int
    near_ties: int  # differing at a near tie: forgiven
    cells: int
    rate: float
    limit: float
    agreement_by_round: tuple[float, ...]


@dataclass(frozen=True, kw_only=True)
class TriggerConditionsFinding(Finding):
    """`longctx.trigger_conditions`: each KV-reuse trigger condition (conditions.py) by name, and
    whether the sessions exercised it ("present", "absent" or "unknown"). Its metric keys are the
    conditions' names."""

    conditions: Mapping[str, str] = field(default_factory=dict)

    def metrics(self) -> dict[str, object]:
        """Each condition's name → its label, in the order found."""
        return dict(self.conditions)

    @classmethod
    def from_metrics(cls, metrics: Mapping[str, Any]) -> Self:
        """The conditions a recorded check names."""
        return cls(conditions={k: v for k, v in metrics.items() if isinstance(v, str)})


@dataclass(frozen=True, kw_only=True)
class BatchFeaturesFinding(Finding):
    """`longctx.batch_features`: request features sent alone and in full batches (batch_features.py)."""

    features: int
    judged: int
    broken: tuple[str, ...]  # features the candidate answered alone but failed in a batch
    changed: tuple[str, ...]  # features whose candidate answer changed in the batch
    batch_tokens: int
    prompt_tokens: int
    fillers: int


@dataclass(frozen=True, kw_only=True)
class NanInfFinding(Finding):
    """`longctx.nan_inf`: NaN/Inf (and null) logprobs in the candidate's answers; with no answer
    watched only `answers` (0) is written."""

    non_finite: int = 0
    missing: int = 0  # null logprobs (what a NaN becomes in strict JSON)
    answers_hit: int = 0
    answers: int = field(default=0, metadata=KEY)

    def complete(self) -> bool:
        """Some answer was watched."""
        return self.answers > 0


@dataclass(frozen=True, kw_only=True)
class CacheMetricsFinding(Finding):
    """`longctx.metrics`: the candidate's prefix-cache counters' rise over the gate (None: not exposed)."""

    prefix_cache_hits: float | None
    prefix_cache_queries: float | None
