"""Gate 3's settings and defaults (the `golden:` section of a policy)."""

from __future__ import annotations

from dataclasses import dataclass, field

from gatekeeper.config.settings import MAX_CASES, MAX_CONCURRENCY, MAX_GAP_NATS, check_ranges, require, setting
from gatekeeper.stats.near_tie import DEFAULT_DRIFTS, DEFAULT_GAPS, gap_for, valid_gaps
from gatekeeper.results import Status


@dataclass(frozen=True)
class GoldenSettings:
    """How gate 3 asks and judges the golden cases.

    - `concurrency` (4): parallel requests per pass;
    - `noise_floor_concurrency` (1): concurrency of the reference's second pass (reverse order);
    - `similar_threshold` (0.8): default threshold of similar_to_reference;
    - `stream_variants` (true): run the streaming variants;
    - `shared_hard_failures` ("WARN"): the status of a hard failure (degenerate output, invalid
      JSON) that the reference shows too in every run — a case the model cannot do; "FAIL" blocks;
    - `max_pass_rate_drop` (0.0): how far the candidate's pass rate may fall below the
      reference's, beyond the reference's own run-to-run noise, before `golden.pass_rate` fails;
    - `baseline` (null): a baseline JSONL (`gatekeeper golden record`) whose answers stand in for
      the live reference (loaded and checked at plan time);
    - `cases` (["*"]): globs over check names (case ids) choosing the cases to run; a glob that
      matches no case is a configuration error (a typo would silently drop cases);
    - `limit` (0): at most this many of the chosen cases, in file order (0: all of them);
      `gatekeeper run --cases GLOB --limit N` set these two, and such a run is partial;
    - `near_tie_gap` (per candidate dtype, nats; float32 is the fallback): a case that fails only
      because the candidate's greedy answer differs from the reference's is asked again with
      logprobs; where the first differing tokens are each in the other's top-k within this gap,
      the divergence is a near tie — noise, not a regression; so it is too when both contested
      tokens' logprobs moved between the sides by at most `near_tie_drift` (per dtype, nats; gate 2's
      `max_abs_delta` defaults: 1.5 for bf16/fp16, 0.01 for fp32; see `gatekeeper/stats/near_tie.py`);
    - `near_tie_max_reviews` (16): at most this many cases are reviewed per run (the rest stay FAIL);
    - `max_precision_flips` (1): a case the candidate fails where the reference passes, parting at
      a near tie, has the reference's answer forced on both; if the candidate follows it but for
      near ties it is a precision flip, and `golden.pass_rate` counts up to this many of them as
      passed (more: undecided, HOLD);
    - `candidate_repeat` (true): ask the candidate a second time too (at the noise-floor
      concurrency, reverse order) and report, advisory, how many answers it did not repeat where
      the reference did (`golden.candidate_repeat`: WARN, never blocking by itself).
    """

    concurrency: int = setting(4, minimum=1, maximum=MAX_CONCURRENCY)
    noise_floor_concurrency: int = setting(1, minimum=1, maximum=MAX_CONCURRENCY,
                                           description="the reference's second pass is the golden gate's noise floor")
    similar_threshold: float = setting(0.8, minimum=0, maximum=1)
    stream_variants: bool = True
    shared_hard_failures: str = "WARN"
    max_pass_rate_drop: float = setting(0.0, minimum=0, maximum=1)
    baseline: str | None = None
    cases: list[str] = field(default_factory=lambda: ["*"])
    limit: int = setting(0, minimum=0, maximum=MAX_CASES, description="0: every chosen case")
    near_tie_gap: dict[str, float] = setting(factory=lambda: dict(DEFAULT_GAPS),
                                             additionalProperties={"minimum": 0, "maximum": MAX_GAP_NATS})
    near_tie_drift: dict[str, float] = setting(factory=lambda: dict(DEFAULT_DRIFTS),
                                               additionalProperties={"minimum": 0, "maximum": MAX_GAP_NATS})
    near_tie_max_reviews: int = setting(16, minimum=0, maximum=MAX_CASES)
    max_precision_flips: int = setting(1, minimum=0, maximum=MAX_CASES)
    candidate_repeat: bool = True

    def __post_init__(self) -> None:
        check_ranges(self)
        require(str(self.shared_hard_failures).upper() in ("FAIL", "WARN"), "shared_hard_failures",
                f"must be FAIL or WARN, got {self.shared_hard_failures!r}")
        require(self.baseline is None or isinstance(self.baseline, str), "baseline", "must be a path")
        require(all(isinstance(g, str) for g in self.cases), "cases",
                f"must be a list of glob strings, got {self.cases!r}")
        require(valid_gaps(self.near_tie_gap), "near_tie_gap", "must map dtypes (float32 at least) to non-negative gaps in nats")
        require(valid_gaps(self.near_tie_drift), "near_tie_drift",
                "must map dtypes (float32 at least) to non-negative logprob moves in nats")

    def gap(self, dtype: str) -> float:
        """The near-tie gap for the candidate's dtype (float32's when it has none)."""
        return gap_for(self.near_tie_gap, dtype)

    def drift(self, dtype: str) -> float:
        """The near-tie drift for the candidate's dtype (float32's when it has none)."""
        return gap_for(self.near_tie_drift, dtype)

    @property
    def shared_hard_failure_status(self) -> Status:
        """`shared_hard_failures` as a Status."""
        return Status(str(self.shared_hard_failures).upper())
