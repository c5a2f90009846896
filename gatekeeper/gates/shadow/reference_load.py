"""What gate 5's replay sends a URL reference, for the dry run's warning (`Gate.reference_load`).

Computed from the policy and the traffic file, as the replay will choose: each stage's requests
(`replay.stage_selection`, seeded), each sent to the reference twice (its answer, and again for
its own noise floor), at the stages' peak concurrency, plus a logprobs re-ask of each answer that
differs. A pair store's answers are judged as stored: nothing is sent, and there is no warning.
The duration estimate takes each answer at its max_tokens (`DEFAULT_ANSWER_TOKENS` when the
recorded request has none), so it is a bound."""

from __future__ import annotations

from gatekeeper.config.run_config import find_file
from gatekeeper.gates.interface import Gate
from gatekeeper.gates.shadow.replay import stage_selection
from gatekeeper.reference_load import ReferenceLoad
from gatekeeper.run_plan import RunPlan
from gatekeeper.traffic.format import load_traffic
from gatekeeper.traffic.settings import ShadowSettings

DEFAULT_ANSWER_TOKENS = 256  # a recorded request without max_tokens: assumed this long for the estimate


def replay_load(gate: type[Gate], settings: ShadowSettings, plan: RunPlan) -> ReferenceLoad | None:
    """The replay's load on the reference under `settings` (None with a pair store): `gate`'s
    `reference_load` (the sentence names it: "gate 5 (shadow)")."""
    if settings.store:
        return None
    traffic = load_traffic(find_file(settings.traffic), skip_bad=settings.bad_lines == "skip")
    done: set[str] = set()
    stages = []
    for stage in settings.stage_plan():
        chosen = stage_selection(traffic.records, stage, plan.seed, done)
        done.update(r.id for r in chosen)
        stages.append(f"{stage.name} {len(chosen)}")
    total = len(done)
    peak = max(max(st.concurrency or settings.concurrency, st.concurrency or settings.noise_floor_concurrency)
               for st in settings.stage_plan())
    answers = [r.request.get("max_tokens") or r.request.get("max_completion_tokens") or DEFAULT_ANSWER_TOKENS
               for r in traffic.records if r.id in done]
    what = (f"gate {gate.stage} ({gate.id}) replays up to {total} recorded requests ({', '.join(stages)}) and sends each to the reference "
            f"twice (its answer, and again for its own noise floor): up to {2 * total} requests at concurrency up to "
            f"{peak}, plus a logprobs re-ask of each answer that differs")
    return ReferenceLoad(what, tuple(int(n) for n in answers), times=2, at_once=max(settings.concurrency, 1), bound=True)
