"""False alarms and power of `<gate>.retry_excess` (gatekeeper/run/retry_check.py), through its own
test, over simulated runs: each gate's requests to each side drop (and are retried) independently
with the side's rate; a run raises a false alarm when any of its gates' checks FAILs.

    python benchmarks/retry_excess.py [--runs 2000] [--seed 0]

Requests per gate per side are those of a default bundled run (summary.json's `retries`, sent):
startup 15, numerics 24, golden 120, longctx 210 (the candidate; the reference side ~900 with its
noise-floor passes), shadow 420 (the reference side ~840 with the replica).
"""

from __future__ import annotations

import argparse

import numpy as np

from gatekeeper.run.retry_check import ALPHA, p_value

GATES = {"startup": (15, 15), "numerics": (8, 24), "golden": (137, 116), "longctx": (210, 900), "shadow": (421, 841)}


def alarm_rate(rng: np.random.Generator, runs: int, ref_rate: float, cand_rate: float) -> float:
    """The share of simulated runs in which some gate's check FAILs."""
    alarms = 0
    for _ in range(runs):
        fired = False
        for cand_sent, ref_sent in GATES.values():
            c, r = rng.binomial(cand_sent, cand_rate), rng.binomial(ref_sent, ref_rate)
            if (c or r) and p_value(cand_sent, int(c), ref_sent, int(r)) < ALPHA:
                fired = True
                break
        alarms += fired
    return alarms / runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"alpha per gate {ALPHA:g}, {len(GATES)} gates, {args.runs} simulated runs a row")
    print(f"{'reference drops':>16} {'candidate drops':>16} {'runs not promoted':>18}")
    for ref_rate, cand_rate in [(0.0, 0.0), (0.01, 0.01), (0.05, 0.05), (0.10, 0.10), (0.0, 0.01), (0.0, 0.02),
                                (0.01, 0.03), (0.0, 0.05), (0.0, 0.10), (0.01, 0.10)]:
        print(f"{ref_rate:>16.0%} {cand_rate:>16.0%} {alarm_rate(rng, args.runs, ref_rate, cand_rate):>18.1%}")


if __name__ == "__main__":
    main()
