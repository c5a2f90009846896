"""What gate 4 costs: its wall time and request count under the default and smoke policies,
on the bundled reference and a clean bundled candidate, measured in this run.

    python benchmarks/longctx_cost.py [--model DIR] [--seed N] [--candidate-fault NAME ...]

Only gate 4 runs (`--gates longctx`); the wall time is the gate's own (startup excluded), and
the request count is every request the gate sent, per target, from the client's timings.
The policy's budget for the default is 90 s on 2 cores; a machine shared with other work
(a training run) will be slower, so the CPU load average is printed beside the figures.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections import Counter
from pathlib import Path

from gatekeeper.config.run_config import resolve
from gatekeeper.run.plan import build_plan
from gatekeeper.run.runner import Runner

BUDGET_S = 90.0


def measure(policy: str, model: str | None, seed: int, faults: list[str], out: Path) -> None:
    """One gate-4 run; prints its wall time, requests per target and verdict."""
    flags = {"policy": policy, "out": str(out), "model": model, "gates": "longctx", "seed": seed,
             "candidate_faults": list(faults)}
    values, sources = resolve(None, os.environ, {k: v for k, v in flags.items() if v is not None})
    result = Runner(build_plan(values, sources)).run()
    gate = next(g for g in result.gates if g.id == "longctx")
    requests = Counter(t.target for t in result.timings if t.gate == "longctx")
    statuses = Counter(c.status.value for c in gate.checks)
    budget = f"  (budget {BUDGET_S:.0f} s: {'within' if gate.duration_s <= BUDGET_S else 'OVER'})" \
        if policy.endswith("default.yaml") else ""
    print(f"{policy:<20} gate 4 {gate.status.value:<5} wall {gate.duration_s:6.1f} s{budget}   requests: "
          f"reference {requests['reference']}, candidate {requests['candidate']}   checks {dict(statuses)}")


def main() -> None:
    """Measure the default then the smoke policy."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--candidate-fault", action="append", default=[])
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as out:
        for policy in ("gates/default.yaml", "gates/smoke.yaml"):
            measure(policy, args.model, args.seed, args.candidate_fault, Path(out))


if __name__ == "__main__":
    main()
