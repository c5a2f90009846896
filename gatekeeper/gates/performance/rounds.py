"""Launch rounds: the measurement where the performance gate launches both sides itself.

Each round is a fresh launch per side, both coming up at once (the first round's are the gate's
first launches; which is started first alternates), a warm-up, `round_pairs` block pairs at concurrency 1 for the primary
figure, and the other levels' shares of their pairs (the guardrails): a level's pairs split over
the first `launches` rounds and one more share in each round after (vLLM 0.31.0 against itself:
c8 guardrails undecided at 12 pairs over 2 launches in 2 of 3 runs while the primary PASSed).
After each round the primary figure's sequential test (`primary.py`,
`perf/sequential.py`) says whether to go on. The previous round's processes are stopped before
the next launch: idle engines hold memory and wake up.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gatekeeper.gates.interface import GateContext
from gatekeeper.gates.performance import primary, primary_figure
from gatekeeper.gates.performance.baseline import BaselineChoice
from gatekeeper.gates.performance.launches import load_targets, roles, sides
from gatekeeper.perf.measure import LevelBlocks, measure_level, warm_up
from gatekeeper.gates.performance.primary_figure import Figure
from gatekeeper.gates.performance.settings import PRIMARY_LEVEL, PerformanceSettings
from gatekeeper.perf.loadgen import LoadTarget
from gatekeeper.perf.sequential import Outcome, Round, State, evaluate
from gatekeeper.perf.workload import Workload


@dataclass(kw_only=True)
class Rounds:
    """What the rounds measured: the primary figure, the test's last state (None: no comparable
    pair in the first round), the rounds, the primary level's blocks, every level measured (the
    primary's first), launches per level (for τ in the guardrails' standard errors) and the last
    round's targets."""

    figure: Figure
    state: State | None
    made: list[Round]
    blocks: LevelBlocks
    levels: list[LevelBlocks]
    launches: dict[int, int]
    targets: dict[str, LoadTarget]
    tau_calibrated: bool


def measure_rounds(ctx: GateContext, s: PerformanceSettings, choice: BaselineChoice, targets: dict[str, LoadTarget],
                   workload: Workload, levels: list[LevelBlocks], taus: Mapping[str, float], tau_note: str) -> Rounds:
    """Launch rounds until the primary figure's sequential test stops; `targets` are the first
    round's, `levels` the guardrail levels (the primary's level among them shares its blocks)."""
    blocks = next((lv for lv in levels if lv.level == PRIMARY_LEVEL), None) or LevelBlocks(PRIMARY_LEVEL)
    others = [lv for lv in levels if lv is not blocks]
    guard_rounds = min(s.launches, s.rounds[0])  # rounds a guardrail level's pairs are split over (always run)
    figure = primary_figure.named(s.primary_figure)
    key = f"c{PRIMARY_LEVEL}.{figure.metric}"
    test = primary.design(s, taus.get(key, s.launch_spread))
    ctx.notes.append(f"performance: primary figure {figure.name} at concurrency {PRIMARY_LEVEL} (the policy's "
                     f"primary_figure: {s.primary_figure}), decided at {s.materiality:.0%} in launch rounds of "
                     f"{s.round_pairs} pairs (one fresh launch per side each, {s.rounds[0]}–{s.rounds[1]} rounds); other "
                     f"levels' pairs split over the first {guard_rounds}, a share more in each further round; {tau_note}")
    made: list[Round] = []
    settle_noted = False  # the first round taken block by block says why in the notes
    state: State | None = None
    k = 0
    while state is None or state.outcome is Outcome.CONTINUE:
        candidate_first = k % 2 == 1  # the launch order alternates between rounds
        if k:
            for role in roles(k):
                ctx.run.retire(role)
            targets = load_targets(ctx, choice, *sides(ctx, choice, k + 1, candidate_first=candidate_first))
        warm = warm_up(targets, workload.requests(s.warmup_requests, ctx.run.seed + 1))
        if warm.settle and not settle_noted:
            ctx.notes.append(f"performance: round {k + 1}: {warm.why()}")
            settle_noted = True
        first = len(blocks.figures["baseline"])
        blocks.extend(measure_level(targets, PRIMARY_LEVEL, s.round_pairs, s.requests_per_block(PRIMARY_LEVEL),
                                    workload, ctx.run.seed, s.slo(), ctx.progress, first=first, settle=warm.settle))
        for lv in others:  # every round: a run the primary needs long is one whose guardrails need more pairs too
            share = launch_share(s.pairs_at(lv.level), guard_rounds, k % guard_rounds)
            lv.extend(measure_level(targets, lv.level, share, s.requests_per_block(lv.level), workload,
                                    ctx.run.seed, s.slo(), ctx.progress, first=len(lv.figures["baseline"]),
                                    settle=warm.settle))
        k += 1
        made_round = primary.round_of(figure, blocks, first, baseline_first=not candidate_first)
        if made_round is None:
            break
        made.append(made_round)
        state = evaluate(made, test, s.confidence)
        ctx.progress(f"performance: round {k}: candidate/baseline {state.ratio:.3f}, log-likelihood ratio "
                     f"{state.llr:+.2f} ({state.outcome.value})")
    launches = {lv.level: k for lv in levels}
    return Rounds(figure=figure, state=state, made=made, blocks=blocks, levels=[blocks, *others], launches=launches, targets=targets,
                  tau_calibrated=key in taus)


def launch_share(pairs: int, launches: int, k: int) -> int:
    """Launch k's share of a level's pairs: an even count (pairs 2j and 2j+1 are the noise floor)."""
    per = pairs // 2
    return 2 * (per // launches + (1 if k < per % launches else 0))
