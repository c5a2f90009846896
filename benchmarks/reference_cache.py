"""What `--reference-cache` saves when several candidates are gated against one reference, and
what `gatekeeper rejudge` costs — measured in this run.

    python benchmarks/reference_cache.py [--policy gates/smoke.yaml] [--gates startup,numerics,golden,longctx,shadow]
                                         [--candidate SPEC ...]

For each candidate (default: the bundled optimized build, the same with decode-slowdown=10, the
bundled reference path) one run without the cache and one with a shared cache directory, in
alternating order (the machine is shared and noisy: interleave). The first cached run fills the
cache; later ones should send the reference only gate 1's requests. Printed per run: wall time,
reference requests sent (answers/reference.jsonl lines not served from the cache) and the hit
rate; then the totals and ratios; then one `gatekeeper rejudge` of the first run, timed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CANDIDATES = ("bundled:optimized", "bundled:optimized+decode-slowdown=10", "bundled:reference")


def run(out: Path, candidate: str, policy: str, gates: str, cache: Path | None) -> tuple[float, int, dict | None, Path]:
    """One `gatekeeper run`; its wall time, the reference requests it sent, its cache use, its directory."""
    spec, _, fault = candidate.partition("+")
    args = [sys.executable, "-m", "gatekeeper.cli", "run", "--out", str(out), "--policy", policy, "--gates", gates,
            "--candidate", spec, *(["--candidate-fault", fault] if fault else []),
            *(["--reference-cache", str(cache)] if cache else [])]
    out.mkdir(parents=True, exist_ok=True)
    before = set(out.iterdir())
    t0 = time.perf_counter()
    proc = subprocess.run(args, cwd=REPO, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    run_dir = max(set(out.iterdir()) - before)
    if not (run_dir / "summary.json").exists():
        sys.exit(f"run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    lines = [json.loads(x) for x in (run_dir / "answers" / "reference.jsonl").read_text().splitlines()]
    sent = sum(1 for x in lines if not x["cached"])
    return wall, sent, json.loads((run_dir / "summary.json").read_text()).get("reference_cache"), run_dir


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--policy", default="gates/smoke.yaml")
    ap.add_argument("--gates", default="startup,numerics,golden,longctx,shadow")
    ap.add_argument("--candidate", action="append", default=None, help="SPEC or SPEC+FAULT (repeatable)")
    args = ap.parse_args()
    candidates = args.candidate or list(CANDIDATES)
    work = Path(tempfile.mkdtemp(prefix="gk-cache-bench-"))
    cache = work / "cache"
    rows = []
    for i, candidate in enumerate(candidates):
        order = (False, True) if i % 2 == 0 else (True, False)
        for cached in order:
            wall, sent, use, run_dir = run(work / ("cached" if cached else "plain"), candidate, args.policy, args.gates,
                                           cache if cached else None)
            rows.append((candidate, cached, wall, sent, use, run_dir))
            hits = f"{use['hits']}/{use['requests']}" if use else "-"
            print(f"{candidate:40s} {'cache' if cached else 'no cache':9s} {wall:6.1f} s  reference requests sent "
                  f"{sent:4d}  hits {hits}", flush=True)
    plain = [r for r in rows if not r[1]]
    cached = [r for r in rows if r[1]]
    later = [r for r in cached if r[4] and r[4]["hits"]]
    print(f"\ntotals over {len(candidates)} candidates: without the cache {sum(r[2] for r in plain):.1f} s, "
          f"{sum(r[3] for r in plain)} reference requests; with it {sum(r[2] for r in cached):.1f} s, "
          f"{sum(r[3] for r in cached)} reference requests "
          f"({sum(r[3] for r in cached) / max(1, sum(r[3] for r in plain)):.2f}x the requests, "
          f"{sum(r[2] for r in cached) / sum(r[2] for r in plain):.2f}x the time)")
    if later:
        print(f"cached runs after the first: {sum(r[3] for r in later) / len(later):.0f} reference requests each "
              "(gate 1's), every other reference answer from the cache")
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "gatekeeper.cli", "rejudge", str(plain[0][5]), "--out", str(work / "rj")],
                          cwd=REPO, capture_output=True, text=True)
    print(f"rejudge of the first run: {time.perf_counter() - t0:.1f} s (exit {proc.returncode}) against its "
          f"{plain[0][2]:.1f} s run")


if __name__ == "__main__":
    main()
