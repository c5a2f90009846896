"""Gate 5's settings and defaults (the `shadow:` section of a policy)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from gatekeeper.config.settings import (MAX_ANSWER_TOKENS, MAX_CONCURRENCY, MAX_GAP_NATS, MAX_REQUESTS, check_ranges,
                                        require, setting)
from gatekeeper.traffic.analysis import CRITICAL, MATERIALITY, SLICE_DIMENSIONS, Thresholds
from gatekeeper.stats.near_tie import DEFAULT_DRIFTS, DEFAULT_GAPS, gap_for, valid_gaps

_NAMES = {"type": ["array", "null"], "minItems": 1, "items": {"type": "string"}}
STAGE_SCHEMA = {"type": "object", "required": ["name"], "additionalProperties": False, "properties": {
    "name": {"type": "string", "minLength": 1}, "tenants": _NAMES, "kinds": _NAMES, "models": _NAMES,
    "share": {"type": "number", "exclusiveMinimum": 0, "maximum": 1, "description": "the fraction of matching requests"},
    "budget": {"type": "integer", "minimum": 1, "maximum": MAX_REQUESTS, "description": "requests replayed at most"},
    "concurrency": {"type": ["integer", "null"], "minimum": 1, "maximum": MAX_CONCURRENCY}}}

EXTENSION = "extension"  # the name of the stage replayed while a rule is undecided

_T = Thresholds()
"""The analysis' defaults: gate 5's settings of the same names start from them (declared once, in analysis.py)."""


@dataclass(frozen=True)
class Stage:
    """One stage of the canary plan: the traffic it draws from (tenants / kinds / models: None
    means any; `share`: the fraction of matching requests, chosen by a seeded hash of their id, so
    a wider stage contains the narrower one), its budget of replayed requests, and its
    `concurrency` (None: the gate's) — a later stage can widen the load as well as the traffic."""

    name: str
    tenants: tuple[str, ...] | None = None
    kinds: tuple[str, ...] | None = None
    models: tuple[str, ...] | None = None
    share: float = 1.0
    budget: int = 100
    concurrency: int | None = None

    def describe(self) -> str:
        """e.g. "tenants internal, 100% of matching requests, at most 60"."""
        parts = [f"{k} {', '.join(v)}" for k, v in (("tenants", self.tenants), ("kinds", self.kinds),
                                                     ("models", self.models)) if v]
        load = [f"concurrency {self.concurrency}"] if self.concurrency else []
        return ", ".join([*parts, f"{self.share:.0%} of matching requests", f"at most {self.budget}", *load])


def _names(value: Any) -> tuple[str, ...] | None:
    return None if value is None else tuple(value)


def parse_stage(raw: dict[str, Any]) -> Stage:
    """One entry of `stages`, already checked against `STAGE_SCHEMA` (the settings' `stages` items)."""
    return Stage(raw["name"], _names(raw.get("tenants")), _names(raw.get("kinds")), _names(raw.get("models")),
                 float(raw.get("share", 1.0)), raw.get("budget", 100), raw.get("concurrency"))


@dataclass(frozen=True)
class ShadowSettings:
    """How gate 5 replays recorded traffic and judges it.

    - `store` (""): a pair store `gatekeeper shadow` filled (or `gatekeeper pairs import`
      merged); when set, the stages draw from its pairs in the order they were stored and judge
      the answers it holds instead of replaying `traffic` (`--shadow-store` sets it). A stage
      no stored pair matches is an advisory SKIP;
    - `traffic` (the shipped sample): the traffic file (docs/traffic-format.md), relative to the
      working directory or the package's shipped files;
    - `bad_lines` ("abort"): what a bad line does — abort the run at plan time (exit 3, naming
      file:line) or "skip" it (counted and listed in `shadow.traffic`);
    - `concurrency` (8, production-like batches): parallel requests per pass; `noise_floor_concurrency` (8): the
      reference's second pass, in reverse order (another batch composition at the same load, so
      the twin is exchangeable with the candidate when nothing regressed);
    - `chunk` (16): requests per replay round (the candidate's and the reference's passes at
      once — two servers — then the twin's), after which the
      sequential test looks and a stage may stop;
    - `twin` ("replica"): where the twin pass goes — "replica": a second launch of the reference
      (a bundled or launched reference; a URL reference falls back to itself), in parallel with
      the first passes, so the noise floor also holds what differs between two processes of the
      same build; "same": the reference itself, after the first passes;
    - `stop_early` (true): a stage stops at the first measure that fires (the sequential test
      allows it); false replays every stage's whole budget, so every rule's evidence is complete;
    - `max_tokens_cap` (96): the largest max_tokens replayed (a request without one gets this);
    - `near_tie_gap` (per candidate dtype, nats; float32 is the fallback; gates 3 and 4 have the
      same setting): a greedy chat answer that differs from the reference's is asked again of both
      with logprobs (`review.py`); where the first differing tokens are each in the other's top-k
      within this gap, the divergence is a near tie — not a disagreement; so it is too where both
      contested tokens' logprobs moved between the sides by at most `near_tie_drift` (per dtype);
    - `preserve_timing` (false) and `time_scale` (1.0): send each request at its recorded offset
      from the first one (from `timestamp`), scaled;
    - the analysis (`analysis.py`): `alpha` (0.05, the family-wise false-ROLLBACK rate of the
      whole gate, valid at every look), `primary_share` (0.5: the share of alpha for
      disagreement over all traffic), Diffy's `noise_relative` (0.2: the candidate's excess over
      the twin is more than this share of their two counts), Kayenta's `confidence` (0.98), the tolerances
      `similarity_tolerance` (0.02) and `length_tolerance` (0.25), `score_pass` (75) and
      `score_marginal` (50), and `min_slice_requests` (20) for a slice to be judged on its own;
    - `materiality` (per critical measure, a share of the pairs it applies to; defaults in
      `analysis.MATERIALITY`: disagreement 0.03, task_failure 0.03, json_parse 0.10, tool_parse
      0.15, degeneration 0.02, nonfinite 0.02, error 0.02, retry 0.02, near_tie 0.10): the candidate's excess over the twin
      that matters. A rule PASSes only when its measures' anytime 95% upper bounds are within it
      (else it is undecided: HOLD, with the judged pairs that would decide it), and a crossing
      whose bound is within it WARNs instead of firing. There is no absolute noise margin: the
      materiality is the one margin, and the user's to set;
    - `slice_weights` (none): slices declared with their weight in the alpha split
      (`tenant=acme: 4`, `kind=tool: 1`; others weigh 1): a tenant that matters more gets more of
      the power. Live (`gatekeeper shadow`), a declared slice has its alpha before its first pair,
      and `slice_reserve` (0.2) of alpha is kept for slices discovered later (the j-th gets
      alpha × slice_reserve × 2^−j); without declared slices, the first judgement's slices are
      the declared ones. An alpha once given never shrinks (`analysis.allocate_live`);
    - `extension` (0; the default policy 780, the rest of its 1,200-request sample): requests beyond the stages'
      budgets, drawn from all the traffic they did not replay, replayed in one more stage
      (`shadow.stage.extension`) while a rule is undecided — its bound wider than its materiality
      — and no stage failed, stopping after the first chunk that decides every rule (the bounds
      and the sequential tests hold at every look, so replaying on is no peeking); 0: HOLD at once;
    - `stages`: the canary plan, in order; each `{name, budget, tenants?, kinds?, models?,
      share?, concurrency?}`; a stage that FAILs stops the widening; requests replayed in one stage are not
      replayed again; the evidence carries over (the sequential test is valid across stages).
    """

    traffic: str = "golden_sets/traffic/sample.jsonl"
    store: str = ""
    bad_lines: str = "abort"
    concurrency: int = setting(8, minimum=1, maximum=MAX_CONCURRENCY)
    noise_floor_concurrency: int = setting(8, minimum=1, maximum=MAX_CONCURRENCY)
    chunk: int = setting(16, minimum=1, maximum=MAX_REQUESTS)
    twin: str = "replica"
    stop_early: bool = True
    max_tokens_cap: int = setting(96, minimum=1, maximum=MAX_ANSWER_TOKENS)
    near_tie_gap: dict[str, float] = setting(factory=lambda: dict(DEFAULT_GAPS),
                                             additionalProperties={"minimum": 0, "maximum": MAX_GAP_NATS})
    near_tie_drift: dict[str, float] = setting(factory=lambda: dict(DEFAULT_DRIFTS),
                                               additionalProperties={"minimum": 0, "maximum": MAX_GAP_NATS})
    preserve_timing: bool = False
    time_scale: float = setting(1.0, exclusiveMinimum=0, maximum=1000)
    alpha: float = setting(_T.alpha, exclusiveMinimum=0, exclusiveMaximum=1)
    primary_share: float = setting(_T.primary_share, exclusiveMinimum=0, exclusiveMaximum=1)
    noise_relative: float = setting(_T.noise_relative, minimum=0, exclusiveMaximum=1)
    confidence: float = setting(_T.confidence, exclusiveMinimum=0.5, exclusiveMaximum=1)
    similarity_tolerance: float = setting(_T.similarity_tolerance, minimum=0, maximum=1)
    length_tolerance: float = setting(_T.length_tolerance, minimum=0, maximum=100)
    score_pass: float = setting(_T.score_pass, minimum=0, maximum=100)
    score_marginal: float = setting(_T.score_marginal, minimum=0, maximum=100)
    min_slice_requests: int = setting(20, minimum=1, maximum=MAX_REQUESTS)
    extension: int = setting(0, minimum=0, maximum=MAX_REQUESTS)
    materiality: dict[str, float] = setting(factory=lambda: dict(MATERIALITY),
                                            additionalProperties={"exclusiveMinimum": 0, "maximum": 1})
    slice_weights: dict[str, float] = setting(factory=dict, additionalProperties={"exclusiveMinimum": 0, "maximum": 1000})
    slice_reserve: float = setting(_T.slice_reserve, exclusiveMinimum=0, exclusiveMaximum=1)
    stages: list[dict[str, Any]] = setting(factory=lambda: [
        {"name": "low-risk-tenant", "tenants": ["internal"], "budget": 60},
        {"name": "canary-25pct", "share": 0.25, "budget": 120},
        {"name": "wide-100pct", "share": 1.0, "budget": 300},
    ], minItems=1, items=STAGE_SCHEMA)

    def __post_init__(self) -> None:
        check_ranges(self)
        require(self.bad_lines in ("abort", "skip"), "bad_lines", "must be abort or skip")
        require(self.twin in ("replica", "same"), "twin", "must be replica or same")
        require(self.score_marginal <= self.score_pass, "score_pass", "needs score_marginal ≤ score_pass")
        require(valid_gaps(self.near_tie_gap), "near_tie_gap", "must map dtypes (float32 at least) to non-negative gaps in nats")
        require(valid_gaps(self.near_tie_drift), "near_tie_drift",
                "must map dtypes (float32 at least) to non-negative logprob moves in nats")
        bad = [k for k in self.slice_weights if k.partition("=")[0] not in SLICE_DIMENSIONS or not k.partition("=")[2]]
        require(not bad, "slice_weights", f"{', '.join(bad)}: a slice is dimension=value, the dimension one of "
                f"{', '.join(SLICE_DIMENSIONS)} (tenant=acme, kind=tool)")
        unknown = sorted(set(self.materiality) - set(CRITICAL))
        require(not unknown, "materiality", f"names no critical measure: {', '.join(unknown)} (one of {', '.join(CRITICAL)})")
        names = [s.name for s in self.stage_plan()]
        require(len(set(names)) == len(names), "stages", "stage names must be unique")
        require(not self.extension or EXTENSION not in names, "stages", f"{EXTENSION!r} names the extension stage")

    def gap(self, dtype: str) -> float:
        """The near-tie gap for the candidate's dtype (float32's when it has none)."""
        return gap_for(self.near_tie_gap, dtype)

    def drift(self, dtype: str) -> float:
        """The near-tie drift for the candidate's dtype (float32's when it has none)."""
        return gap_for(self.near_tie_drift, dtype)

    def stage_plan(self) -> list[Stage]:
        """The stages, parsed."""
        return [parse_stage(raw) for raw in self.stages]

    def extension_stage(self) -> Stage | None:
        """The stage replayed while a rule is undecided (None: no extension)."""
        return Stage(EXTENSION, share=1.0, budget=self.extension) if self.extension else None

    def thresholds(self) -> Thresholds:
        """The analysis' part of the settings."""
        return Thresholds(**{f.name: getattr(self, f.name) for f in fields(Thresholds)})
