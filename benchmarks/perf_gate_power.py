"""The performance gate's false alarms, decided share and power on the bundled engines, over seeds.

    python benchmarks/perf_gate_power.py [--seeds 20] [--first-seed 0] [--candidates clean,...]
                                         [--history FILE] [--json FILE]

Every seed and every candidate gets fresh processes, as a run does: for each of the policy's
`launches` (2 by default) a new baseline (the optimized path, no faults) and a new candidate server
are started, warmed up and measured on their share of the pairs, then stopped — so the spread
between two launches of one build is in the figures, not sampled once for all seeds. The gate's
own measurement and judgement (`measure_level`, `judge` with τ = `launch_spread`, the default
policy's performance settings, seed s: other requests, other block order) decide each
measurement: FAIL (a primary metric regressed by the gate's rule), PASS (every primary metric's
interval within its budget) or undecided. Printed per candidate: the three shares, which metrics
failed, the requests per side, the median worse-by per metric and the wall time. The capacity
sweep is not part of the verdict and is not run here. With `--history`, τ per figure comes from
the A/A launch pairs `gatekeeper perf calibrate` stored there for this machine, as the gate takes
it (CPU time per token is then a blocking primary figure); without, the policy's τ is assumed. CPU time per output token is read from
each server's threads (`gatekeeper/perf/cpu.py`), as the gate reads it for targets it launches.
With `--json`, every measurement's comparisons (worse-by, interval, Holm-adjusted p, noise floor,
τ, pairs) are appended to FILE as one JSON line, so other budgets can be judged from the same
measurements (`benchmarks/perf_budget_rejudge.py`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))

from server_util import running_server  # noqa: E402

from gatekeeper.config.policy import load_policy  # noqa: E402
from gatekeeper.gates.performance.gate import judge, regressed  # noqa: E402
from gatekeeper.gates.performance.rounds import launch_share  # noqa: E402
from gatekeeper.gates.performance.spread import calibrated_spreads  # noqa: E402
from gatekeeper.gates.registry import settings_types  # noqa: E402
from gatekeeper.perf.measure import LevelBlocks, measure_level, warm_up  # noqa: E402
from gatekeeper.perf.cpu import CpuMeter  # noqa: E402
from gatekeeper.perf.loadgen import LoadTarget  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
GK_TINY = ROOT / "gatekeeper" / "models" / "gk-tiny"
DEFAULT = "clean,decode-slowdown=23,decode-slowdown=5,silent-fallback"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--first-seed", type=int, default=0, help="seeds first-seed .. first-seed + seeds - 1")
    ap.add_argument("--json", type=Path, default=None, help="append every measurement's comparisons to this JSONL file")
    ap.add_argument("--candidates", default=DEFAULT)
    ap.add_argument("--policy", default=str(ROOT / "gates" / "default.yaml"))
    ap.add_argument("--history", type=Path, default=None, help="a performance history holding this machine's calibration")
    args = ap.parse_args()
    s = load_policy(args.policy, settings_types()).settings("performance")
    taus, note = calibrated_spreads(args.history, s) if args.history else ({}, "τ assumed: no --history")
    print(note, flush=True)
    names = args.candidates.split(",")
    outcomes: dict[str, list[dict]] = {n: [] for n in names}
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        for n in names:  # candidates interleaved within a seed: drift hits all of them
            t0 = time.perf_counter()
            levels = [LevelBlocks(lv) for lv in s.levels]
            for k in range(s.launches):
                with ExitStack() as stack:  # fresh processes for every launch of every side
                    base = stack.enter_context(running_server(GK_TINY, "--profile", "optimized"))
                    cand = stack.enter_context(running_server(GK_TINY, "--profile", "optimized",
                                                              *([] if n == "clean" else ["--fault", n])))
                    targets = {"baseline": LoadTarget(base.url, "gk-tiny", cpu=CpuMeter.of_process(base.proc.pid)),
                               "candidate": LoadTarget(cand.url, "gk-tiny", cpu=CpuMeter.of_process(cand.proc.pid))}
                    warm_up(targets, s.workload().requests(s.warmup_requests, seed + 1))
                    for blocks in levels:
                        blocks.extend(measure_level(targets, blocks.level, launch_share(s.pairs_at(blocks.level), s.launches, k),
                                                    s.requests_per_block(blocks.level), s.workload(), seed, s.slo(),
                                                    lambda m: None, first=len(blocks.figures["baseline"])))
            judged = [(c, p) for c, p in judge(levels, s, s.launches, taus) if c.family == "guardrail"]
            failed = [f"{c.level}.{c.metric}" for c, p in judged if regressed(c, p, s.alpha)]
            outcome = "FAIL" if failed else "PASS" if all(c.excluded() for c, _ in judged) else "undecided"
            per_side = sum(len(r.measured) for lv in levels for r in lv.results["candidate"])
            worse = {f"{c.level}.{c.metric}": c.worse_by for c, _ in judged}
            outcomes[n].append({"outcome": outcome, "failed": failed, "per_side": per_side, "worse": worse,
                                "wall": time.perf_counter() - t0})
            if args.json:
                with args.json.open("a") as f:
                    f.write(json.dumps({"seed": seed, "candidate": n, "outcome": outcome, "per_side": per_side,
                                        "alpha": s.alpha, "confidence": s.confidence, "launches": s.launches,
                                        "comparisons": [_row(c, p) for c, p in judged]}) + "\n")
            figures = " ".join(f"{k} {v:+.1%}" for k, v in worse.items() if v is not None)
            print(f"seed {seed:2d} {n:22s} {outcome:9s} {','.join(failed) or '-':40s} "
                  f"{per_side} req/side {time.perf_counter() - t0:5.1f}s  worse-by: {figures}", flush=True)
    print()
    print(f"{'candidate':22s} {'FAIL':>6s} {'PASS':>6s} {'undecided':>9s} {'req/side':>9s} {'median worse-by per metric':s}")
    for n in names:
        rows = outcomes[n]
        share = {o: sum(1 for r in rows if r["outcome"] == o) / len(rows) for o in ("FAIL", "PASS", "undecided")}
        which = Counter(f for r in rows for f in r["failed"])
        keys = list(rows[0]["worse"])
        medians = ", ".join(f"{k} {statistics.median(r['worse'][k] or 0.0 for r in rows):+.1%}" for k in keys)
        print(f"{n:22s} {share['FAIL']:>6.0%} {share['PASS']:>6.0%} {share['undecided']:>9.0%} {rows[0]['per_side']:>9d}  "
              f"{medians}")
        if which:
            print(f"{'':22s} failed metrics: {dict(which)}")
        print(f"{'':22s} wall per measurement: median {statistics.median(r['wall'] for r in rows):.1f} s")


def _row(c, p_adj: float | None) -> dict:
    """One comparison as the JSON line keeps it."""
    return {"level": c.level, "metric": c.metric, "pairs": c.pairs, "worse_by": c.worse_by, "worse_bound": c.worse_bound,
            "ci": c.ci, "p_adj": p_adj, "noise_ratio": c.noise_ratio, "limit": c.limit, "threshold": c.threshold,
            "spread": c.spread, "higher_is_better": c.higher_is_better}


if __name__ == "__main__":
    main()
