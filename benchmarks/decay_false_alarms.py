"""False alarms of the session-decay tests, by simulation: how often a candidate that is no
worse than the reference is called decaying, for the gate's tests and for the pooled sign test
they replace.

    python benchmarks/decay_false_alarms.py [--runs 2000] [--sessions 12] [--rounds 12] [--alpha 0.01]

Null model: reference and candidate are the same engine. Each session has its own difficulty,
falling by round (recall probability from 0.95 down to a per-session floor), and each target
*remembers* within a session: after a round it answers the next the same way with probability
`--stickiness`, else draws afresh — cells of one session are dependent, as on a real server where
a fact once lost stays lost. Any FAIL-grade result (Holm-adjusted p below alpha, limit crossed)
is a false alarm by construction. The pooled sign test over (session, round) cells, which the
gate used before, treats dependent cells as independent; its rate is printed beside.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gatekeeper.gates.longctx.decay_null import simulate  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--sessions", type=int, default=12)
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--alpha", type=float, default=0.01)
    ap.add_argument("--limit", type=float, default=0.005)
    ap.add_argument("--recall-limit", type=float, default=0.05)
    ap.add_argument("--stickiness", type=float, default=0.8)
    args = ap.parse_args()
    t0 = time.perf_counter()
    r = simulate(args.runs, args.sessions, args.rounds, args.alpha, args.limit, args.recall_limit, args.stickiness, seed=1)
    print(f"{args.runs} null runs of {args.sessions} sessions x {args.rounds} rounds, stickiness {args.stickiness}, "
          f"alpha {args.alpha} ({time.perf_counter() - t0:.1f} s)")
    print(f"  gate (permutation over sessions, Holm over 2 tests, limits {args.limit}/round and {args.recall_limit}): "
          f"{r.gate_alarms} false alarms = {r.gate_alarms / args.runs:.2%} (policy: at most {args.alpha:.0%})")
    print(f"  p-values alone (Holm family below alpha, no limit): {r.test_alarms / args.runs:.2%}")
    print(f"  pooled sign test over cells (the old test, no limit): {r.pooled_alarms / args.runs:.2%}")


if __name__ == "__main__":
    main()
