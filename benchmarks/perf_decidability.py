"""What the performance gate can decide on this machine: simulated runs through the gate's own
statistics (`gatekeeper.perf.compare.compare` and the gate's `judge`: Holm within each family).

    python benchmarks/perf_decidability.py [--runs 2000] [--tau 0.025] [--sigma-c1 0.08] [--sigma-c8 0.11]

Each simulated run draws, per side and launch, a launch offset ~ N(0, τ) (two launches of one
build differ by that much) and per block pair a log-ratio noise ~ N(0, σ) (σ per concurrency,
block level, as the gate's A/A data show: 0.06–0.09 at c1, 0.08–0.12 at c8 on this 2-core VM;
τ from benchmarks/perf_noise.py). The guardrail family is output tokens/s and TPOT p50 at c1 and
c8 (the default policy's 24 and 12 block pairs). A true slowdown of s multiplies TPOT by 1 + s and
divides throughput by it. Printed per design (budget, launches K, confidence) and slowdown: the
share of runs the guardrail family FAILs, PASSes everywhere (decided good) and leaves undecided.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gatekeeper.gates.performance.gate import judge, regressed  # noqa: E402
from gatekeeper.perf.measure import LevelBlocks  # noqa: E402
from gatekeeper.gates.performance.settings import PerformanceSettings  # noqa: E402

PAIRS = {1: 24, 8: 12}


def one_run(rng: np.random.Generator, s: PerformanceSettings, launches: int, tau: float, sigma: dict[int, float],
            slowdown: float, tau_used: float) -> str:
    """FAIL, PASS (every primary check decided good) or UNDECIDED for one simulated run."""
    levels = []
    for level, pairs in PAIRS.items():
        lv = LevelBlocks(level)
        per_launch = pairs // launches
        for _launch in range(launches):
            offset = {side: rng.normal(0, tau) for side in ("baseline", "candidate")}
            for _ in range(per_launch):
                for side in ("baseline", "candidate"):
                    noise = rng.normal(0, sigma[level] / math.sqrt(2)) + offset[side]
                    slow = math.log1p(slowdown) if side == "candidate" else 0.0
                    lv.figures[side].append({"tpot_p50_s": 0.03 * math.exp(noise + slow),
                                             "output_tokens_per_s": 30.0 * math.exp(-noise - slow),
                                             "ttft_p95_s": 0.1 * math.exp(noise)})
        levels.append(lv)
    tuned = PerformanceSettings(levels=list(PAIRS), throughput_budget=s.throughput_budget, tpot_budget=s.tpot_budget,
                                confidence=s.confidence, launch_spread=tau_used)
    primary = [(c, p) for c, p in judge(levels, tuned, launches) if c.family == "guardrail"]
    if any(regressed(c, p, tuned.alpha) for c, p in primary):
        return "FAIL"
    return "PASS" if all(c.excluded() for c, _ in primary) else "UNDECIDED"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--tau", type=float, default=0.025, help="the machine's launch-to-launch spread")
    ap.add_argument("--sigma-c1", type=float, default=0.08)
    ap.add_argument("--sigma-c8", type=float, default=0.11)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    sigma = {1: args.sigma_c1, 8: args.sigma_c8}
    print(f"τ = {args.tau:.3f}, σ per block pair c1 {args.sigma_c1:.3f} / c8 {args.sigma_c8:.3f}; {args.runs} runs each")
    print(f"{'budget':>6} {'K':>2} {'conf':>5} {'τ used':>6} {'slowdown':>8} {'FAIL':>6} {'PASS':>6} {'undecided':>9}")
    designs = [(0.02, 1, 0.98, 0.0), (0.02, 1, 0.98, args.tau), (0.02, 2, 0.90, args.tau), (0.10, 1, 0.90, args.tau),
               (0.10, 2, 0.90, args.tau), (0.10, 2, 0.98, args.tau), (0.15, 2, 0.90, args.tau)]
    for budget, launches, conf, tau_used in designs:
        s = PerformanceSettings(throughput_budget=budget, tpot_budget=budget, confidence=conf)
        for slowdown in (0.0, 0.05, 0.23):
            counts = {"FAIL": 0, "PASS": 0, "UNDECIDED": 0}
            for _ in range(args.runs):
                counts[one_run(rng, s, launches, args.tau, sigma, slowdown, tau_used)] += 1
            share = {k: v / args.runs for k, v in counts.items()}
            print(f"{budget:>6.2f} {launches:>2} {conf:>5.2f} {tau_used:>6.3f} {slowdown:>8.0%} {share['FAIL']:>6.1%} "
                  f"{share['PASS']:>6.1%} {share['UNDECIDED']:>9.1%}")


if __name__ == "__main__":
    main()
