"""Gate 5's detection rates, by simulation through its own judging code: the shipped traffic's
requests in the policy's stages (`stage_selection`, `slice_plan`), the slices' e-processes and
bounds (`Analysis`), the rules (`pair_rule`) and the undecided rule (`detection.rule`). Per pair
only the measures' outcomes are simulated (`Measures`), not the answers.

    python benchmarks/shadow_detection.py [--runs 200] [--policy gates/default.yaml] [--scenarios ...]

Printed per scenario: how often the gate's rules ROLLBACK (a rule FAILs), HOLD (a rule undecided:
its bound wider than the materiality) or PROMOTE, the pairs replayed (the policy's `extension`
replays on while a rule is undecided), and the share of PROMOTEs that carry a near miss
(`shadow.near_miss`: a test past half its threshold on a log scale, or beyond the noise below
materiality). A fault must not PROMOTE (ROLLBACK or HOLD);
a clean pair must PROMOTE (false ROLLBACK and undecided are the costs). Scenarios:

- clean, twin noise q: candidate and twin each disagree with the reference on a share q of
  answers, independently (a batch-variant engine);
- shared errors p: both fail a share p of requests, independently (transient 503s on both);
- json breakage b: the candidate breaks a share b of JSON answers (the shipped traffic: ~15% JSON);
- shared 503s p: both sides' requests need a retry (a 503 the client's retry hid) on a share p,
  independently;
- errors +e: the candidate fails a share e more of requests;
- 503s +e: the candidate's requests need a retry on a share e more (every answer arrives);
- changed c: the candidate's answers differ on a share c more (valid, other text);
- one tenant: every answer of tenant `assistant` (~18% of the traffic) differs;
- near ties q: the candidate's greedy answers part from the reference's at a near tie on a share q
  (forgiven one by one, their rate judged: a declared bf16 build parts so on ~5% of the shipped
  traffic, measured);
- shift d: a kernel shifts every close call d nats toward the runner-up; from the statistics
  review's toy greedy model (64 tokens, 15% close calls): 0.5 nat parts 80% of greedy answers at a
  near tie, 1 nat 96%, 1.5 nat 99% (57% of them at a near tie, 42% confidently).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gatekeeper.detection import rule  # noqa: E402
from gatekeeper.gates.shadow.near_miss import near_misses  # noqa: E402
from gatekeeper.gates.shadow.replay import stage_selection  # noqa: E402
from gatekeeper.results import Status  # noqa: E402
from gatekeeper.traffic.analysis import Analysis  # noqa: E402
from gatekeeper.traffic.answers import Answer  # noqa: E402
from gatekeeper.traffic.format import TrafficRecord, load_traffic  # noqa: E402
from gatekeeper.traffic.judging import RequestFacts, slice_plan  # noqa: E402
from gatekeeper.traffic.measures import Measures, Pair  # noqa: E402
from gatekeeper.traffic.pair_of import wants_json  # noqa: E402
from gatekeeper.traffic.rules import PAIR_RULES, pair_rule, undecided  # noqa: E402
from gatekeeper.traffic.settings import ShadowSettings  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TASK_BASE = 0.24  # the shipped model fails a quarter of checkable tasks on both sides alike (a clean run's rate)
TOOL_CALLED = 0.5  # of tool requests, those the reference answers with a call (tool_parse applies)
Outcome = Callable[[random.Random, TrafficRecord], tuple[dict[str, bool], dict[str, bool]]]


SHIFT = {0.5: (0.80, 0.0), 1.0: (0.96, 0.0), 1.5: (0.993 * 0.575, 0.993 * 0.422)}
"""Per systematic shift (nats): the shares of greedy answers parting at a near tie and confidently
(the review's toy model, `../shared/reference/statistics-review-2026-12.md` §4)."""


def _side(rng: random.Random, r: TrafficRecord, *, disagree: float = 0.0, error: float = 0.0,
          json_break: float = 0.0, retried: float = 0.0, task_shared: bool = False, tie: float = 0.0) -> dict[str, bool]:
    failed = rng.random() < error
    broken = wants_json(r) and rng.random() < json_break
    differs = failed or broken or rng.random() < disagree
    tied = not differs and not r.sampled and rng.random() < tie
    return {"error": failed, "disagreement": differs, "json_parse": failed or broken,
            "task_failure": failed or broken or task_shared, "tool_parse": failed,
            "retry": failed or rng.random() < retried, "near_tie": tied}


def scenario(name: str, value: float) -> Outcome:
    """The per-pair outcomes (candidate's, twin's) of one scenario."""
    def outcome(rng: random.Random, r: TrafficRecord) -> tuple[dict[str, bool], dict[str, bool]]:
        shared_task = rng.random() < TASK_BASE  # the model's own failures: the same on both sides
        if name == "clean":
            return (_side(rng, r, disagree=value, task_shared=shared_task),
                    _side(rng, r, disagree=value, task_shared=shared_task))
        if name == "shared-errors":
            return _side(rng, r, error=value, task_shared=shared_task), _side(rng, r, error=value, task_shared=shared_task)
        if name == "shared-503s":
            return (_side(rng, r, retried=value, task_shared=shared_task),
                    _side(rng, r, retried=value, task_shared=shared_task))
        twin = _side(rng, r, task_shared=shared_task)
        if name == "json":
            return _side(rng, r, json_break=value, task_shared=shared_task), twin
        if name == "errors":
            return _side(rng, r, error=value, task_shared=shared_task), twin
        if name == "503s":
            return _side(rng, r, retried=value, task_shared=shared_task), twin
        if name == "changed":
            return _side(rng, r, disagree=value, task_shared=shared_task), twin
        if name == "tenant":
            return _side(rng, r, disagree=1.0 if r.tenant == "assistant" else 0.0, task_shared=shared_task), twin
        if name == "near-ties":
            return _side(rng, r, tie=value, task_shared=shared_task), twin
        if name == "shift":
            tie, confident = SHIFT[value]
            return _side(rng, r, disagree=0.0 if r.sampled else confident, tie=tie / (1 - confident),
                         task_shared=shared_task), twin
        raise ValueError(name)
    return outcome


def _facts(r: TrafficRecord) -> RequestFacts:
    return RequestFacts(r.tenant, r.kind, r.model_alias, r.sampled, wants_json(r), bool(r.request.get("tools")),
                        bool(r.request.get("logprobs")))


def one_run(rng: random.Random, s: ShadowSettings, stages: list[list[TrafficRecord]], more: list[TrafficRecord],
            outcome: Outcome) -> tuple[str, int, bool]:
    """The rules' verdict of one simulated replay (ROLLBACK, HOLD or PROMOTE), the pairs it
    replayed and whether a near miss was named; `more`: the extension stage's requests, replayed a
    chunk at a time while a rule is undecided after the stages (as the gate does)."""
    analysis = Analysis(slice_plan((_facts(r) for sel in [*stages, more] for r in sel), s.min_slice_requests),
                        s.thresholds())

    def replay(records: list[TrafficRecord]) -> bool:
        for r in records:
            cand, twin = outcome(rng, r)
            tools_called = bool(r.request.get("tools")) and rng.random() < TOOL_CALLED
            bad = {m: (cand[m], twin[m]) for m in ("disagreement", "task_failure", "error", "retry")}
            bad["degeneration"] = (False, False)
            if not r.sampled:
                bad["near_tie"] = (cand["near_tie"], twin["near_tie"])
            if wants_json(r):
                bad["json_parse"] = (cand["json_parse"], twin["json_parse"])
            if tools_called:
                bad["tool_parse"] = (cand["tool_parse"], twin["tool_parse"])
            pair = Pair(id=r.id, tenant=r.tenant, kind=r.kind, model_alias=r.model_alias, wants_json=wants_json(r), tools=None,
                        candidate=Answer(), reference=Answer(), twin=Answer(), sampled=r.sampled)
            analysis.add(pair, Measures(judged=True, why_not="", bad=bad, similarity=1.0, twin_similarity=1.0, length_ratio=1.0,
                                        twin_length_ratio=1.0, divergence=None))
        return analysis.fired and s.stop_early

    for selection in stages:
        if replay(selection):
            return "ROLLBACK", analysis.pairs, False
    for at in range(0, len(more), s.chunk):
        if not undecided(analysis.results(critical_only=True)):
            break
        if replay(more[at:at + s.chunk]):
            return "ROLLBACK", analysis.pairs, False
    slices = analysis.results()
    verdict = "PROMOTE"
    for name in PAIR_RULES:
        out = pair_rule(name, slices)
        if out.status is Status.FAIL:
            return "ROLLBACK", analysis.pairs, False
        if out.status is Status.PASS and rule(True, out.reason, None, out.limit) is not None:
            verdict = "HOLD"
    return verdict, analysis.pairs, bool(near_misses(slices))


def settings_of(policy: Path) -> ShadowSettings:
    """The policy's gate 5 settings (defaults for what it leaves out)."""
    section = (yaml.safe_load(policy.read_text()).get("gates") or {}).get("shadow") or {}
    known = {f.name for f in fields(ShadowSettings)}
    return ShadowSettings(**{k: v for k, v in section.items() if k in known})


SCENARIOS = ["clean:0", "clean:0.02", "clean:0.05", "clean:0.1", "clean:0.2", "shared-errors:0.02", "shared-503s:0.02",
             "json:0.05", "json:0.1", "json:0.2", "errors:0.01", "errors:0.02", "errors:0.05", "503s:0.02", "503s:0.05",
             "changed:0.02", "changed:0.03", "changed:0.05", "changed:0.1", "tenant:1", "near-ties:0.05",
             "shift:0.5", "shift:1.0", "shift:1.5"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--policy", type=Path, default=ROOT / "gates" / "default.yaml")
    ap.add_argument("--scenarios", nargs="+", default=SCENARIOS)
    args = ap.parse_args()
    s = settings_of(args.policy)
    records = load_traffic(ROOT / s.traffic).records
    done: set[str] = set()
    stages = []
    for stage in s.stage_plan():
        stages.append(stage_selection(records, stage, 0, done))
        done.update(r.id for r in stages[-1])
    extension = s.extension_stage()
    more = stage_selection(records, extension, 0, done) if extension is not None else []
    n = sum(len(x) for x in stages)
    json_n = sum(wants_json(r) for x in stages for r in x)
    print(f"{args.policy.name}: {n} pairs in {len(stages)} stages ({json_n} JSON), extension up to {len(more)}, "
          f"{args.runs} runs a scenario; "
          f"materiality {dict(s.thresholds().materiality)}")
    print(f"{'scenario':22} {'ROLLBACK':>9} {'HOLD':>6} {'PROMOTE':>8}   not PROMOTE   mean pairs   near miss")
    rng = random.Random(20261205)
    t0 = time.perf_counter()
    for spec in args.scenarios:
        name, value = spec.split(":")
        runs = [one_run(rng, s, stages, more, scenario(name, float(value))) for _ in range(args.runs)]
        counts = Counter(v for v, _, _ in runs)
        rate = {v: counts[v] / args.runs for v in ("ROLLBACK", "HOLD", "PROMOTE")}
        print(f"{spec:22} {rate['ROLLBACK']:9.1%} {rate['HOLD']:6.1%} {rate['PROMOTE']:8.1%}   "
              f"{1 - rate['PROMOTE']:11.1%}   {sum(n for _, n, _ in runs) / args.runs:10.0f}   "
              f"{sum(near for v, _, near in runs if v == 'PROMOTE') / max(counts['PROMOTE'], 1):9.1%}")
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
