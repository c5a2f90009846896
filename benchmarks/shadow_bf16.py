"""A declared bf16 candidate of the clean bundled build through every gate, over seeds: it carries
no bug, so a ROLLBACK is a false alarm unless its evidence shows a confident divergence.

    python benchmarks/shadow_bf16.py [--seeds 10] [--first 0] [--gates startup,shadow] [--out DIR]

Per seed s: `gatekeeper run --seed s --candidate-opt dtype=bf16` under the default policy (every
gate: the run starts its own bundled fp32 reference and the reference's replica). Printed per
seed: the verdict, the run's wall time, the blocking checks that did not pass, and for every gate-5
check that FAILed its reason and evidence tables — a confident divergence is listed with both
sides' top tokens and logprobs at the first differing token. Then the verdicts counted.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "helpers"))

from run_util import gk_run  # noqa: E402


def run(seed: int, gates: str | None, out: Path) -> tuple[dict | None, Path | None, float, str]:
    """One `gatekeeper run` (`run_util.gk_run`): its summary.json (None when it wrote none), its run
    directory, wall time, stderr."""
    t0 = time.perf_counter()
    outcome = gk_run(out, "--seed", str(seed), "--candidate-opt", "dtype=bf16", *(["--gates", gates] if gates else []),
                     timeout=3600)
    wall = time.perf_counter() - t0
    if outcome.summary is None:
        return None, None, wall, outcome.stderr.strip()[-300:]
    return outcome.summary, outcome.run_dir, wall, ""


def shadow_failures(run_dir: Path) -> list[dict]:
    """Gate 5's FAILed checks as records.jsonl holds them (with their evidence)."""
    out = []
    for line in (run_dir / "records.jsonl").read_text().splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue  # a torn last line
        if rec.get("gate") == "shadow" and rec.get("status") == "FAIL":
            out.append(rec)
    return out


def show(rec: dict) -> None:
    """A failed gate-5 check: its reason and its tables (the divergences with their logprobs)."""
    print(f"    {rec['id']}: {rec['reason']}")
    for ev in rec.get("evidence", []):
        if ev["kind"] == "table" and not ev["title"].startswith("slices"):
            print(f"      {ev['title']}: {' | '.join(ev['data']['columns'])}")
            for row in ev["data"]["rows"][:12]:
                print(f"        {' | '.join(str(x) for x in row)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--first", type=int, default=0, help="the first seed")
    ap.add_argument("--gates", default=None, help="the gates to run (default: every gate the policy enables)")
    ap.add_argument("--out", default=None, help="keep the runs' reports here (default: a temporary directory)")
    args = ap.parse_args()
    verdicts: Counter[str] = Counter()
    walls = []
    with tempfile.TemporaryDirectory(prefix="gk-bf16-") as tmp:
        for seed in range(args.first, args.first + args.seeds):
            summary, run_dir, wall, err = run(seed, args.gates, Path(args.out or tmp) / str(seed))
            walls.append(wall)
            if summary is None or run_dir is None:
                verdicts["no summary"] += 1
                print(f"seed {seed}: no summary ({wall:.0f} s): {err}", flush=True)
                continue
            verdicts[summary["verdict"]] += 1
            gate5 = next((g for g in summary["gates"] if g["id"] == "shadow"), None)
            print(f"seed {seed}: {summary['verdict']:<8} {wall:5.0f} s (gate 5 {gate5['duration_s'] if gate5 else 0:.0f} s, "
                  f"{gate5['status'] if gate5 else 'not run'})  {'; '.join(summary['reasons'][:3])}", flush=True)
            for g in summary["gates"]:
                if g["id"] == "shadow":
                    for note in g.get("notes", []):
                        print(f"    note: {note}")
            for rec in shadow_failures(run_dir):
                show(rec)
            sys.stdout.flush()
    print(f"\nbf16 over {args.seeds} seeds: {dict(verdicts)}; wall time per run: median "
          f"{sorted(walls)[len(walls) // 2]:.0f} s, max {max(walls):.0f} s")


if __name__ == "__main__":
    main()
