"""False alarms of gate 5's sequential test, by simulation: a candidate exchangeable with the
reference's twin, looked at after every pair, against McNemar's exact test repeated at every
chunk without correction (what "check the dashboard until it is red" does).

    python benchmarks/shadow_false_alarms.py [--runs 2000] [--pairs 420] [--alpha 0.025] [--chunk 16]

Null model: on each pair the candidate and the twin fail a measure independently with the same
probability (`--rates`, several noise levels); any crossing is a false alarm. Also printed: the
power against a candidate that fails 3% of pairs more (a deterministic reference).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

from scipy.stats import binomtest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gatekeeper.traffic.sequential import PairedEProcess  # noqa: E402


def one(rng: random.Random, pairs: int, alpha: float, chunk: int, p_twin: float, p_cand: float) -> tuple[bool, bool, int]:
    """(sequential crossed, repeated McNemar crossed, pairs at the sequential crossing or `pairs`)."""
    e = PairedEProcess(alpha)
    b = c = 0
    repeated = False
    for i in range(1, pairs + 1):
        cand, twin = rng.random() < p_cand, rng.random() < p_twin
        e.update(cand, twin)
        b += cand and not twin
        c += twin and not cand
        if i % chunk == 0 and b + c and not repeated:
            repeated = binomtest(b, b + c, 0.5, alternative="greater").pvalue < alpha
    return e.rejected, repeated, e.crossed_at or pairs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--pairs", type=int, default=420)
    ap.add_argument("--alpha", type=float, default=0.025)
    ap.add_argument("--chunk", type=int, default=16)
    ap.add_argument("--rates", type=float, nargs="+", default=[0.0, 0.02, 0.1, 0.3])
    args = ap.parse_args()
    rng = random.Random(1)
    t0 = time.perf_counter()
    print(f"{args.runs} null runs of {args.pairs} pairs, alpha {args.alpha}, looks after every pair (sequential) or "
          f"every {args.chunk} pairs (repeated McNemar)")
    for p in args.rates:
        runs = [one(rng, args.pairs, args.alpha, args.chunk, p, p) for _ in range(args.runs)]
        seq = sum(r[0] for r in runs) / args.runs
        rep = sum(r[1] for r in runs) / args.runs
        print(f"  failure rate {p:4.0%} on both: sequential {seq:.2%}   repeated McNemar {rep:.2%}")
    runs = [one(rng, args.pairs, args.alpha, args.chunk, 0.0, 0.03) for _ in range(args.runs)]
    hit = [r for r in runs if r[0]]
    print(f"power, candidate +3% over a deterministic twin: {len(hit) / args.runs:.1%}; pairs needed: mean "
          f"{sum(r[2] for r in hit) / max(len(hit), 1):.0f}")
    print(f"({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
