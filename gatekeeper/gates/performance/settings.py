"""The performance gate's settings and defaults (the `performance:` section of a policy)."""

from __future__ import annotations

from dataclasses import dataclass

from gatekeeper.config.settings import (MAX_ANSWER_TOKENS, MAX_CONCURRENCY, MAX_CONTEXT_TOKENS, MAX_REQUESTS, check_ranges,
                                        require, setting)
from gatekeeper.gates.performance.primary_figure import FIGURES
from gatekeeper.perf.compare import Budget
from gatekeeper.perf.figures import Slo
from gatekeeper.perf.workload import Workload

BASELINES = ("auto", "reference", "candidate-without-faults")
ENGINE_DEVICES = ("auto", "cpu", "accelerator")
PRIMARY_FIGURES = tuple(FIGURES)  # the policy's names for them
PRIMARY_LEVEL = 1  # the primary decode figure's concurrency (`primary.py`)
PRIMARY_METRICS = tuple(f.metric for f in FIGURES.values())  # the figures it may decide on


@dataclass(frozen=True)
class PerformanceSettings:
    """How the performance gate measures and what it allows.

    - `baseline` ("auto"): what the candidate's speed is compared with. "reference": the
      reference target (what a real engine pair means); "candidate-without-faults": the bundled
      candidate's own launch without its faults (for the bundled pair: the trusted reference is
      the slow fp32 path, not a performance baseline); "auto": the latter for a bundled
      candidate, the reference for a real engine judged against a real reference, and none for a
      real engine judged against the bundled reference (its correctness path says nothing about
      another engine's speed: the gate does not apply, `performance.not_applicable`, an advisory SKIP).
      The report says which it was.
    - `levels` ([1, 8]): the concurrencies judged, each on its own (a win at high concurrency
      cannot hide a loss at low); `level_requests` (96): requests per side at each level, in
      counterbalanced block pairs of `block_requests` (0: the level, at least 4) requests, so a
      level's pairs are `level_requests` / block size, rounded down to an even count, at least 4
      (concurrency 1, the noisiest and cheapest, gets the most pairs); `pairs` (0) fixes the
      count at every level instead; `warmup_requests` (4) per target before anything is measured.
    - the workload: `source` ("synthetic": seeded prompts in the `input_tokens` ([48, 160])
      range, sized with the baseline's /tokenize where it has one; "traffic": requests drawn from
      `traffic`, default gate 5's traffic file), `output_tokens` ([32, 32]), `ignore_eos` (true)
      so output lengths are controlled where the server supports it.
    - budgets (fractions the candidate may be worse by): `throughput_budget` (0.15, output
      tokens/s), `tpot_budget` (0.15, TPOT p50; request seconds per output token with `primary_figure:
      request`) — the guardrail family, blocking — and `ttft_budget`
      (0.25, TTFT p95) — the tail family, advisory; `alpha` (0.01): the false-FAIL rate of each
      family over its metrics and levels (Holm); `confidence` (0.90, two-sided: the one-sided 95%
      bound of a non-inferiority test, as TOST uses): the interval whose worst end must be within
      the budget for a PASS. A correctness fix may cost ~2% (docs/bug-classes.md#patch-cost), but a
      budget is only worth what the machine can decide: with τ = 2.5% and the default pairs, 15% is
      the smallest that decides ≥ 95% of clean runs (`benchmarks/perf_decidability.py`;
      docs/performance.md). `cpu_budget` (0.05, the server's CPU seconds per output token where
      both sides run here, at concurrency 1) and `cpu_budget_concurrent` (0.15, at the levels above
      it: a guardrail's budget, as wide as the others' — 12 block pairs over 2 launches at concurrency 8
      bound a clean run's CPU per token within about ±5%, which a 5% budget cannot decide):
      blocking once this machine's τ for it is calibrated, and only for an
      engine on the CPU — `engine_device` ("auto": observed, the engine holds no accelerator
      device open (`perf/cpu.py`); "cpu" or "accelerator": declared). A GPU engine's CPU time is
      its host overhead: advisory.
    - the primary decode figure (`primary.py`), where the gate launches both sides (the bundled
      pair): `materiality` (0.05): the decode regression that matters, decided by a sequential
      test in launch rounds — each round a fresh launch per side (launch order alternating), a
      warm-up and `round_pairs` (16) block pairs at concurrency 1 — that FAILs at a regression of
      the materiality with `primary_power` (0.95) and at none with `primary_alpha` (0.05),
      deciding no sooner than `rounds[0]` (3) rounds and holding undecided after `rounds[1]` (12).
      `primary_figure` ("decode"): seconds per output token after the first chunk, or "request":
      the whole request's seconds per output token, for a server whose first chunk does not mark
      the end of prefill (vLLM's CPU build: `primary_figure.py`, docs/vllm.md).
    - `launches` (2): the rounds the other levels' pairs are split over (the guardrails: their
      figures at their budgets); each further round the primary needs measures one more share;
      `launch_spread` (0.025): τ, how far two launches of one build
      differ in these figures, put in every standard error as 2τ²/launches — measured on a 2-core
      shared VM by `benchmarks/perf_noise.py`; measure yours and set it.
    - capacity: `sweep` ([1, 2, 4, 8, 16]) concurrencies, one block each per target, under the
      SLOs `slo_ttft_s` (1.0) and `slo_tpot_s` (0.05) (0: not an objective); the knee is the
      highest concurrency up to which every swept level's p95 TTFT and p95 TPOT meet them.
    - cost: `price_per_accelerator_hour` (1.0, in the policy's currency) × `accelerators` (1)
      per 1,000 successful requests at the knee.
    - `history` (""): a JSONL file each run's figures are appended to (`gatekeeper perf
      history FILE` finds change points); "" writes `perf-history.jsonl` beside the run
      directories.
    """

    baseline: str = "auto"
    levels: list[int] = setting(factory=lambda: [1, 8], minItems=1, items={"minimum": 1, "maximum": MAX_CONCURRENCY})
    level_requests: int = setting(96, minimum=1, maximum=MAX_REQUESTS)
    pairs: int = setting(0, minimum=0, maximum=MAX_REQUESTS)
    block_requests: int = setting(0, minimum=0, maximum=MAX_REQUESTS)
    warmup_requests: int = setting(4, minimum=0, maximum=MAX_REQUESTS)
    source: str = "synthetic"
    traffic: str = ""
    input_tokens: list[int] = setting(factory=lambda: [48, 160], minItems=2, maxItems=2,
                                      items={"minimum": 1, "maximum": MAX_CONTEXT_TOKENS})
    output_tokens: list[int] = setting(factory=lambda: [32, 32], minItems=2, maxItems=2,
                                       items={"minimum": 1, "maximum": MAX_ANSWER_TOKENS})
    ignore_eos: bool = True
    throughput_budget: float = setting(0.15, minimum=0, exclusiveMaximum=1)
    tpot_budget: float = setting(0.15, minimum=0, exclusiveMaximum=1)
    cpu_budget: float = setting(0.05, minimum=0, exclusiveMaximum=1)
    cpu_budget_concurrent: float = setting(0.15, minimum=0, exclusiveMaximum=1)
    engine_device: str = "auto"
    primary_figure: str = "decode"
    ttft_budget: float = setting(0.25, minimum=0, exclusiveMaximum=1)
    alpha: float = setting(0.01, exclusiveMinimum=0, exclusiveMaximum=0.5)
    materiality: float = setting(0.05, exclusiveMinimum=0, exclusiveMaximum=1)
    primary_alpha: float = setting(0.05, exclusiveMinimum=0, exclusiveMaximum=0.5)
    primary_power: float = setting(0.95, minimum=0.5, exclusiveMaximum=1)
    rounds: list[int] = setting(factory=lambda: [3, 12], minItems=2, maxItems=2, items={"minimum": 1, "maximum": 40})
    round_pairs: int = setting(16, minimum=2, maximum=MAX_REQUESTS)
    launches: int = setting(2, minimum=1, maximum=8)
    launch_spread: float = setting(0.025, minimum=0, maximum=0.5)
    confidence: float = setting(0.90, exclusiveMinimum=0.5, exclusiveMaximum=1)
    sweep: list[int] = setting(factory=lambda: [1, 2, 4, 8, 16], minItems=1, items={"minimum": 1, "maximum": MAX_CONCURRENCY})
    slo_ttft_s: float = setting(1.0, minimum=0, maximum=3600, description="0: not an objective")
    slo_tpot_s: float = setting(0.05, minimum=0, maximum=60, description="0: not an objective")
    price_per_accelerator_hour: float = setting(1.0, minimum=0, maximum=1_000_000)
    accelerators: int = setting(1, minimum=1, maximum=1_000_000)
    history: str = ""

    def __post_init__(self) -> None:
        check_ranges(self)
        require(self.baseline in BASELINES, "baseline", f"must be one of {', '.join(BASELINES)}")
        require(self.engine_device in ENGINE_DEVICES, "engine_device", f"must be one of {', '.join(ENGINE_DEVICES)}")
        require(self.primary_figure in PRIMARY_FIGURES, "primary_figure", f"must be one of {', '.join(PRIMARY_FIGURES)}")
        require(self.source in ("synthetic", "traffic"), "source", "must be synthetic or traffic")
        require(self.pairs == 0 or self.pairs >= 3, "pairs", "must be 0 (from level_requests) or at least 3 (a t interval needs pairs)")
        require(self.rounds[0] <= self.rounds[1], "rounds", "must be [fewest, most] with fewest ≤ most")
        require(self.round_pairs % 2 == 0, "round_pairs", "must be even (pairs 2k and 2k+1 make the noise floor)")
        for key in ("input_tokens", "output_tokens"):
            low, high = getattr(self, key)
            require(low <= high, key, "must be [low, high] with low ≤ high")

    def requests_per_block(self, level: int) -> int:
        """Requests in one block at `level`."""
        return self.block_requests or max(4, level)

    def pairs_at(self, level: int) -> int:
        """Block pairs at `level`: `pairs`, or `level_requests` in blocks, an even count ≥ 4
        (pairs 2k and 2k+1 make the noise floor)."""
        if self.pairs:
            return self.pairs
        return max(4, self.level_requests // self.requests_per_block(level) // 2 * 2)

    def workload(self) -> Workload:
        """The request shapes."""
        return Workload((self.input_tokens[0], self.input_tokens[1]), (self.output_tokens[0], self.output_tokens[1]),
                        self.ignore_eos)

    def budgets(self, level: int = PRIMARY_LEVEL) -> list[Budget]:
        """The metrics judged at `level` with their budgets (CPU per token's widens above concurrency 1)."""
        cpu = self.cpu_budget if level <= PRIMARY_LEVEL else self.cpu_budget_concurrent
        return [Budget("output_tokens_per_s", True, self.throughput_budget), Budget(self.latency_metric(), False, self.tpot_budget),
                Budget("cpu_s_per_token", False, cpu, needs_calibration=True, cpu_time=True),
                Budget("ttft_p95_s", False, self.ttft_budget, family="tail")]

    def latency_metric(self) -> str:
        """The latency guardrail's figure: TPOT p50, or request seconds per output token where the
        policy's primary figure is the request's (a server whose first chunk does not mark the end
        of prefill scatters TPOT as it scatters the decode figure: `primary_figure.py`)."""
        return "e2e_s_per_token" if self.primary_figure == "request" else "tpot_p50_s"

    def measured_levels(self) -> list[int]:
        """The judged levels and the primary figure's: what a calibration measures."""
        return sorted({*self.levels, PRIMARY_LEVEL})

    def figures(self, level: int) -> list[str]:
        """The figures judged at `level` (the budgets', and the primary's at its level): what a
        calibration measures τ for."""
        return list(dict.fromkeys([b.metric for b in self.budgets(level)] + (list(PRIMARY_METRICS) if level == PRIMARY_LEVEL else [])))

    def slo(self) -> Slo:
        """The SLOs goodput and the knee use."""
        return Slo(self.slo_ttft_s or None, self.slo_tpot_s or None)
