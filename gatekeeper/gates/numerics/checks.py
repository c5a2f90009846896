"""Gate 2's checks and what each found, typed: the check ids other code reads (gate 5's
`logit_drift` rule, the correctness table) and one finding per check whose fields are its metric
keys (`gatekeeper/gates/finding.py`: written once, here). The gate builds each finding and hands it to
`ctx.check`, which records its `metrics()`; a reader (the correctness table, a stored summary.json) takes it back with
`TheFinding.of(check)`.

`numerics.scoring` says whether the targets could be scored teacher-forced (`ScoringFinding`),
`numerics.tokenization` whether they split the texts alike (`TokenizationFinding`),
`numerics.nan_inf` counts NaN/Inf logprobs (`NanInfFinding`); each drift figure (`max_logprob_delta`,
`p99_logprob_delta`, `mean_logprob_delta`, `kl`, `nll_drift`, `top1_agreement`, `topk_overlap`) is a
`DriftFinding`.

A literal `numerics.…` id outside this package is a test failure (tests/repo/test_contracts.py);
the findings' tests: tests/gates/numerics/test_numerics_findings.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gatekeeper.gates.finding import OPTIONAL, Finding
from gatekeeper.results import CheckResult

GATE = "numerics"
COVERAGE = f"{GATE}.coverage"
SCORING = f"{GATE}.scoring"  # could the targets be scored teacher-forced at all
TOKENIZATION = f"{GATE}.tokenization"  # do both tokenize the prompts alike
NAN_INF = f"{GATE}.nan_inf"
NLL_DRIFT = f"{GATE}.nll_drift"
MAX_LOGPROB_DELTA = f"{GATE}.max_logprob_delta"
P99_LOGPROB_DELTA = f"{GATE}.p99_logprob_delta"
MEAN_LOGPROB_DELTA = f"{GATE}.mean_logprob_delta"
KL = f"{GATE}.kl"
TOP1_AGREEMENT = f"{GATE}.top1_agreement"
TOPK_OVERLAP = f"{GATE}.topk_overlap"
CHECKS = (NAN_INF, MAX_LOGPROB_DELTA, P99_LOGPROB_DELTA, MEAN_LOGPROB_DELTA, KL, NLL_DRIFT, TOP1_AGREEMENT, TOPK_OVERLAP)
"""NaN/Inf and the drift figures, in the order the gate records them."""
JUDGEABILITY = (COVERAGE, SCORING, TOKENIZATION)
"""The checks that say what gate 2 could judge: not drift figures."""


def is_drift(check: CheckResult) -> bool:
    """A drift figure (or NaN/Inf): one of gate 2's checks other than what it could judge."""
    return check.id not in JUDGEABILITY


@dataclass(frozen=True, kw_only=True)
class ScoringFinding(Finding):
    """`numerics.scoring`: the prompts, those scored teacher-forced on both targets (the others
    tokenize differently) and the top-k the positions are compared over."""

    prompts: int
    scored: int
    top_k: int


@dataclass(frozen=True, kw_only=True)
class TokenizationFinding(Finding):
    """`numerics.tokenization`: the texts, those the targets tokenize differently, and where they
    do, the first such text (its first 200 characters) and the token index where they part."""

    texts: int
    differ: int
    first_text: str | None = field(default=None, metadata=OPTIONAL)
    first_position: int | None = field(default=None, metadata=OPTIONAL)


@dataclass(frozen=True, kw_only=True)
class NanInfFinding(Finding):
    """`numerics.nan_inf`: NaN/Inf logprobs from the candidate, and positions it returned null
    for where the reference has a logprob (a NaN in strict JSON looks the same)."""

    nan_inf: int
    missing: int


@dataclass(frozen=True, kw_only=True)
class DriftFinding(Finding):
    """A drift figure's check (`nll_drift`, `kl`, `top1_agreement`...): the candidate's value, the
    limit it is judged by (the policy's tolerance for the dtype, loosened to the noise floor), that
    tolerance, the reference's own noise floor on the same prompts and the candidate's dtype. A
    figure the check lacks (it was skipped) reads None."""

    value: float | None = None
    limit: float | None = None
    policy: float | None = None
    noise_floor: float | None = None
    dtype: str | None = None
