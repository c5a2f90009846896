"""Gate 5 under transient failures all three servers share, by simulation through the gate's
own code: the default policy's stages over the shipped traffic sample, every pair measured by
`measure()` and fed to the `Analysis` the gate uses, the pair rules read at the end.

    python benchmarks/shadow_shared_failures.py [--runs 200] [--rates 0.01,0.02,0.05]

Null model: candidate, reference and twin answer alike, and each request fails independently
with the same rate r (a 503, a timeout). Any fired rule is a false ROLLBACK; the gate's alpha
(0.05 in the default policy) bounds its rate. Also printed: the power against a candidate that
fails 5 points more often than the others.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gatekeeper.traffic.analysis import Analysis  # noqa: E402
from gatekeeper.traffic.answers import Answer  # noqa: E402
from gatekeeper.gates.shadow.gate import _facts  # noqa: E402
from gatekeeper.traffic.judging import slice_plan  # noqa: E402
from gatekeeper.traffic.measures import measure  # noqa: E402
from gatekeeper.gates.shadow.replay import stage_selection  # noqa: E402
from gatekeeper.traffic.rules import PAIR_RULES, pair_rule  # noqa: E402
from gatekeeper.traffic.settings import ShadowSettings  # noqa: E402
from gatekeeper.traffic.pair_of import pair_of  # noqa: E402
from gatekeeper.config.run_config import find_file  # noqa: E402
from gatekeeper.results import Status  # noqa: E402
from gatekeeper.traffic.format import TrafficRecord, load_traffic  # noqa: E402

FAILED = Answer(error="http: HTTP 503 Service Unavailable")


def selections(s: ShadowSettings, seed: int = 0) -> list[list[TrafficRecord]]:
    """The requests each of the policy's stages replays, as the gate selects them."""
    records = load_traffic(find_file(s.traffic)).records
    done: set[str] = set()
    out = []
    for stage in s.stage_plan():
        out.append(stage_selection(records, stage, seed, done))
        done.update(r.id for r in out[-1])
    return out


def _answer(r: TrafficRecord) -> Answer:
    """The answer every healthy server gives (tool requests: a valid call of the first tool)."""
    tools = r.request.get("tools") or ()
    if tools:
        return Answer("", ((tools[0]["function"]["name"], "{}"),), "tool_calls", 8)
    return Answer(f"answer to {r.id}", (), "stop", 8)


def one_run(s: ShadowSettings, stages: Sequence[Sequence[TrafficRecord]], rng: random.Random,
            rate: float, candidate_rate: float) -> list[str]:
    """The pair rules that fired in one simulated replay (stopping at the first firing, as the gate does)."""
    analysis = Analysis(slice_plan((_facts(r) for sel in stages for r in sel), s.min_slice_requests), s.thresholds())
    for chosen in stages:
        for r in chosen:
            ok = _answer(r)
            ref, twin = (FAILED if rng.random() < rate else ok for _ in range(2))
            cand = FAILED if rng.random() < candidate_rate else ok
            pair = pair_of(r, ref, cand, twin)
            analysis.add(pair, measure(pair))
        if analysis.fired:
            break
    slices = analysis.results()
    return [name for name in PAIR_RULES if pair_rule(name, slices).status is Status.FAIL]


def rollback_rate(rate: float, runs: int, seed: int = 0, excess: float = 0.0) -> tuple[int, dict[str, int]]:
    """(runs that ROLLBACKed, firings per rule) over `runs` seeded replays."""
    s = ShadowSettings()
    stages = selections(s)
    rng = random.Random(seed)
    fired_runs, per_rule = 0, {name: 0 for name in PAIR_RULES}
    for _ in range(runs):
        fired = one_run(s, stages, rng, rate, rate + excess)
        fired_runs += bool(fired)
        for name in fired:
            per_rule[name] += 1
    return fired_runs, per_rule


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--rates", default="0.01,0.02,0.05")
    args = ap.parse_args()
    alpha = ShadowSettings().alpha
    print(f"default policy, {sum(len(x) for x in selections(ShadowSettings()))} requests in its stages, alpha {alpha}")
    for rate in (float(x) for x in args.rates.split(",")):
        t0 = time.perf_counter()
        n, rules = rollback_rate(rate, args.runs)
        power, _ = rollback_rate(rate, args.runs // 4 or 1, seed=1, excess=0.05)
        print(f"shared failure rate {rate:4.0%}: false ROLLBACK {n}/{args.runs} ({n / args.runs:.1%}; alpha {alpha:.0%}) "
              f"{ {k: v for k, v in rules.items() if v} or ''}; candidate failing 5 points more: caught "
              f"{power}/{args.runs // 4 or 1}   ({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
