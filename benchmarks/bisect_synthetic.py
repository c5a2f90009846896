"""`gatekeeper bisect` over a synthetic history of the bundled engine, over seeds.

    python benchmarks/bisect_synthetic.py [--seeds 5] [--first 0] [--scenarios correctness,performance,clean] [--builds 16]

The history: `--builds` builds b00…, each a file of `gatekeeper serve` arguments; a fault switches
on from one build on (tests/helpers/bisect_util.py), and the launch template starts the engine with a
build's arguments, as a real template starts a release. Scenarios:

- correctness: `kv-stale-reuse` from build 11, bisected on `longctx.session_agreement`;
- performance: `decode-slowdown=23` from build 6, bisected on `performance.c1.tpot_p50_s` (a policy
  judging concurrency 1 only, with a one-level capacity sweep: the step's cost is the judgement);
- clean: no fault, bisected on `longctx.session_agreement`: "no bad build" is the right answer.

Per seed: the bisect's answer, whether it is exact and right, the builds judged against the
budget ⌈log₂ N⌉ + 1, and the wall time. Then the counts. A quiet machine is needed for the
performance scenario (under load its checks stay undecided and builds are skipped).
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))

from bisect_util import synthetic_history  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = {
    "correctness": ("kv-stale-reuse", 11, "longctx.session_agreement", None),
    "performance": ("decode-slowdown=23", 6, "performance.c1.tpot_p50_s",
                    "version: 1\ngates:\n  performance:\n    levels: [1]\n    sweep: [1]\n"),
    "clean": ("kv-stale-reuse", None, "longctx.session_agreement", None),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--first", type=int, default=0, help="the first seed")
    ap.add_argument("--scenarios", default="correctness,performance,clean")
    ap.add_argument("--builds", type=int, default=16)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    root = args.out or Path(tempfile.mkdtemp(prefix="gk-bisect-"))
    n = args.builds
    limit = 1 + math.ceil(math.log2(n - 1))
    for name in args.scenarios.split(","):
        fault, first_bad, check, policy = SCENARIOS[name]
        builds, template = synthetic_history(root / name / "history", n, first_bad, fault)
        extra = []
        if policy:
            (root / name / "policy.yaml").write_text(policy)
            extra = ["--policy", str(root / name / "policy.yaml")]
        right = 0
        for seed in range(args.first, args.first + args.seeds):
            out = root / name / f"seed{seed}"
            t0 = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "gatekeeper.cli", "bisect", "--good", builds[0], "--bad", builds[-1],
                                   "--builds", ",".join(builds), "--launch", template, "--check", check,
                                   "--seed", str(seed), "--out", str(out), *extra],
                                  cwd=ROOT, capture_output=True, text=True, check=False)
            wall = time.perf_counter() - t0
            if not (out / "bisect.json").is_file():
                print(f"{name} seed {seed}: no report (exit {done.returncode}): {done.stderr.strip()[-300:]}", flush=True)
                continue
            r = json.loads((out / "bisect.json").read_text())
            want = builds[first_bad] if first_bad is not None else None
            ok = r["first_bad"] == want and r["decided"]
            right += ok
            outcomes = " ".join(f"{s['build']}:{s['outcome']}" for s in r["steps"])
            print(f"{name} seed {seed}: {r['headline']} — {'right' if ok else 'WRONG'}; {r['judged']} judged "
                  f"(budget {limit}); {wall:.0f} s; {outcomes}", flush=True)
        print(f"{name}: {right}/{args.seeds} right ({fault if first_bad is not None else 'no fault'}"
              f"{f' from build {first_bad}' if first_bad is not None else ''}, {n} builds, check {check})", flush=True)


if __name__ == "__main__":
    main()
