"""Wall time of a default `gatekeeper run` and of the smoke policy, and the share of CPU spent
in the engines versus in gatekeeper itself — measured in this run.

    python benchmarks/time_to_verdict.py [--model DIR] [--candidate-fault NAME ...]

The runner runs in this process, so this process's CPU time is gatekeeper's own, and the CPU
time of its (waited-for) children is the engines'.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

from gatekeeper.config.run_config import resolve
from gatekeeper.plan import build_plan
from gatekeeper.runner import Runner


TARGET_S = 180.0


def cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


def measure(policy: str, model: str | None, faults: list[str], out: Path) -> None:
    flags = {"policy": policy, "out": str(out), "model": model, "candidate_faults": tuple(faults)}
    values, sources = resolve(None, os.environ, flags)
    plan = build_plan(values, sources)
    own0, kids0 = cpu()
    t0 = time.perf_counter()
    result = Runner(plan).run()
    wall = time.perf_counter() - t0
    own1, kids1 = cpu()
    own, engines = own1 - own0, kids1 - kids0
    checks = sum(len(g.checks) for g in result.gates)
    print(f"{policy:<20} verdict {result.verdict.value:<8} wall {wall:6.1f} s   checks {checks:>4}   "
          f"CPU: engines {engines:6.1f} s, gatekeeper {own:5.1f} s ({100 * own / max(own + engines, 1e-9):4.1f}% of total)")
    print(" " * 20 + " per gate: " + ", ".join(f"{g.id} {g.duration_s:.1f} s" for g in result.gates))
    if policy.endswith("default.yaml"):
        print(" " * 20 + f" target: the default run within {TARGET_S:.0f} s (issue 16): "
              + ("met" if wall <= TARGET_S else f"MISSED by {wall - TARGET_S:.0f} s"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--candidate-fault", action="append", default=[])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as out:
        for policy in ("gates/default.yaml", "gates/smoke.yaml"):
            measure(policy, args.model, args.candidate_fault, Path(out))


if __name__ == "__main__":
    main()
