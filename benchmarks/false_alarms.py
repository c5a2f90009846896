"""False alarms: the verdict of candidates that carry no bug, over several seeds, measured in this run.

    python benchmarks/false_alarms.py [--seeds 5] [--policy gates/default.yaml] [--variant clean --variant bf16]

Each variant is a candidate without a fault — the bundled optimized path as it is (`clean`), or
in bf16 (`bf16`, a legitimate lower-precision build that differs from the fp32 reference by
rounding only). Any ROLLBACK of such a candidate is a false alarm by construction; a HOLD says
something could not be judged. Runs are interleaved (seed by seed, variant by variant) so the
shared machine's load falls on all variants alike. Prints one line per run (verdict, the checks
that decided it, coverage per gate) and the false-ROLLBACK count per variant.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

VARIANTS = {"clean": (), "bf16": ("--candidate-opt", "dtype=bf16")}


def run(seed: int, variant: str, policy: str, out: Path) -> dict:
    """One `gatekeeper run`; its summary.json (or a stand-in when the run wrote none)."""
    out.mkdir(parents=True, exist_ok=True)
    before = set(out.iterdir())
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "gatekeeper.cli", "run", "--out", str(out), "--seed", str(seed),
                           "--policy", policy, *VARIANTS[variant]], capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    new = sorted(set(out.iterdir()) - before)
    if not new or not (new[-1] / "summary.json").is_file():
        return {"verdict": f"no summary (exit {proc.returncode})", "reasons": [proc.stderr.strip()[-200:]], "gates": [],
                "wall_s": wall}
    summary = json.loads((new[-1] / "summary.json").read_text())
    summary["wall_s"] = wall
    return summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--policy", default="gates/default.yaml")
    ap.add_argument("--variant", action="append", choices=sorted(VARIANTS), help="repeatable (default: clean and bf16)")
    args = ap.parse_args()
    variants = args.variant or ["clean", "bf16"]
    verdicts: dict[str, Counter[str]] = {v: Counter() for v in variants}
    deciding: dict[str, Counter[str]] = {v: Counter() for v in variants}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.seeds):
            for variant in variants:
                s = run(seed, variant, args.policy, Path(tmp) / variant)
                verdicts[variant][s["verdict"]] += 1
                ids = [r.split(":")[0] for r in s.get("reasons", [])] if s["verdict"] != "PROMOTE" else []
                deciding[variant].update(ids)
                coverage = " ".join(f"{g['id']}={g['coverage']['share']:.0%}" for g in s["gates"]
                                    if g.get("coverage") and g["coverage"]["share"] is not None)
                print(f"seed {seed} {variant:>5}: {s['verdict']:<8} {s['wall_s']:5.1f} s  coverage {coverage}  "
                      f"{', '.join(ids[:4])}", flush=True)
    print()
    for variant in variants:
        runs = sum(verdicts[variant].values())
        print(f"{variant:>5}: {verdicts[variant]['ROLLBACK']} false ROLLBACK of {runs} runs; verdicts {dict(verdicts[variant])}; "
              f"deciding checks {dict(deciding[variant].most_common(6))}")


if __name__ == "__main__":
    main()
