"""The performance gate's primary decision, counted over seeds on real launches of the bundled pair.

    python benchmarks/perf_sequential.py [--seeds 4] [--scenarios clean,decode-slowdown=5,...]
                                         [--policy FILE] [--busy] [--out DIR] [--calibrate PAIRS]

Each run is `gatekeeper run --gates performance --seed S [--candidate-fault F]` (the default
policy unless `--policy`); scenarios are interleaved seed by seed (the machine drifts over an
hour: every scenario sees the same drift; one listed twice, e.g. `clean,decode-slowdown=5,clean`, runs
twice a seed, the second time at seed + 1000). `--busy` burns one core with a spinning process for
the whole benchmark (a busy runner). Printed per scenario: the primary check's FAIL / PASS / HOLD
counts (HOLD: undecided or the noise check), the rounds used (median, p90), requests per side,
the performance gate's minutes (median), and the mean realised ratio of the primary figure.

With `--out DIR` every finished run is also appended to DIR/bench.jsonl (scenario, seed, busy,
outcome, rounds, ratio, minutes, requests), so a benchmark too long for one sitting is run in
several (`--first-seed` moves on) and `--tally DIR` prints the table over all of them, without
running anything.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))

from run_util import gk_run  # noqa: E402

SCENARIOS = "clean,decode-slowdown=5,decode-slowdown=23,silent-fallback"


def one_run(out: Path, seed: int, fault: str | None, policy: str | None) -> dict:
    """One performance-only run (`run_util.gk_run`); its primary check and gate time."""
    run = gk_run(out, "--gates", "performance", "--seed", str(seed), *(["--candidate-fault", fault] if fault else []),
                 *(["--policy", policy] if policy else []), timeout=3600)
    if run.summary is None:
        return {"error": run.stderr[-500:]}
    gate = next(g for g in run.summary["gates"] if g["id"] == "performance")
    primary = next((c for c in gate["checks"] if c["id"] == "performance.primary"), None)
    measurement = next((c for c in gate["checks"] if c["id"] == "performance.measurement"), None)
    return {"primary": primary, "seconds": gate["duration_s"], "verdict": run.summary["verdict"],
            "requests": (measurement or {}).get("metrics", {}).get("requests_per_side", {}).get("candidate")}


def outcome(primary: dict | None) -> str:
    """FAIL, PASS (a WARN "significantly worse within" counts as PASS) or HOLD."""
    if primary is None:
        return "HOLD"
    if primary["status"] == "FAIL":
        return "FAIL"
    if primary["status"] in ("PASS", "WARN") and not primary.get("undecided"):
        return "PASS"
    return "HOLD"


def record(out: Path, scenario: str, seed: int, busy: bool, r: dict) -> dict:
    """One finished run as a bench.jsonl row (appended to DIR/bench.jsonl)."""
    m = (r.get("primary") or {}).get("metrics", {})
    row = {"scenario": scenario, "seed": seed, "busy": busy, "outcome": outcome(r.get("primary")),
           "rounds": m.get("rounds"), "ratio": m.get("ratio"), "minutes": (r.get("seconds") or 0.0) / 60,
           "requests": r.get("requests"), "error": r.get("error")}
    with (out / "bench.jsonl").open("a") as f:
        f.write(json.dumps(row) + "\n")
    return row


def table(rows: list[dict]) -> None:
    """FAIL / PASS / HOLD, rounds (median, p90), requests, gate minutes and mean ratio per scenario."""
    keys = sorted({(r["scenario"], r["busy"]) for r in rows}, key=lambda k: (k[1], k[0] != "clean", k[0]))
    print(f"\n{'scenario':30s} {'runs':>4s} {'FAIL':>4s} {'PASS':>4s} {'HOLD':>4s} {'rounds p50':>10s} {'p90':>4s} "
          f"{'req/side':>8s} {'gate min p50':>12s} {'max':>5s} {'ratio':>6s}")
    for sc, busy in keys:
        rs = [r for r in rows if r["scenario"] == sc and r["busy"] == busy]
        counts = {k: sum(1 for r in rs if r["outcome"] == k) for k in ("FAIL", "PASS", "HOLD")}
        rounds = sorted(r["rounds"] for r in rs if r["rounds"] is not None)
        ratios = [r["ratio"] for r in rs if r["ratio"] is not None]
        mins = [r["minutes"] for r in rs if r["minutes"]]
        reqs = [r["requests"] for r in rs if r["requests"]]
        p90 = rounds[min(len(rounds) - 1, int(0.9 * len(rounds)))] if rounds else float("nan")
        name = sc + (" (one core burnt)" if busy else "")
        print(f"{name:30s} {len(rs):4d} {counts['FAIL']:4d} {counts['PASS']:4d} {counts['HOLD']:4d} "
              f"{statistics.median(rounds) if rounds else float('nan'):10.1f} {p90:4} "
              f"{statistics.median(reqs) if reqs else float('nan'):8.0f} "
              f"{statistics.median(mins) if mins else float('nan'):12.2f} {max(mins) if mins else float('nan'):5.2f} "
              f"{statistics.mean(ratios) if ratios else float('nan'):6.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--first-seed", type=int, default=100)
    ap.add_argument("--scenarios", default=SCENARIOS)
    ap.add_argument("--policy")
    ap.add_argument("--busy", action="store_true", help="burn one core for the whole benchmark")
    ap.add_argument("--out", type=Path, help="run directories (default: a temporary directory)")
    ap.add_argument("--calibrate", type=int, default=0, metavar="PAIRS", help="calibrate this machine first")
    ap.add_argument("--tally", type=Path, metavar="DIR", help="print the table of DIR/bench.jsonl and run nothing")
    a = ap.parse_args()
    if a.tally:
        table([json.loads(line) for line in (a.tally / "bench.jsonl").read_text().splitlines() if line.strip()])
        return
    scenarios = a.scenarios.split(",")
    out = a.out or Path(tempfile.mkdtemp(prefix="perf-seq-"))
    out.mkdir(parents=True, exist_ok=True)
    if a.calibrate:
        t = time.monotonic()
        subprocess.run([sys.executable, "-m", "gatekeeper.cli", "perf", "calibrate", "--out", str(out), "--pairs",
                        str(a.calibrate), *(["--policy", a.policy] if a.policy else [])], check=True, capture_output=True)
        print(f"calibrated with {a.calibrate} A/A launch pairs in {(time.monotonic() - t) / 60:.1f} min", flush=True)
        from gatekeeper.perf.calibration import machine_class, spread_of, spreads
        from gatekeeper.perf.history import load_history

        for figure, sp in sorted(spreads(load_history(out / "perf-history.jsonl", kind="calibration"), machine_class()).items()):
            print(f"  τ {figure}: estimate {spread_of(sp.estimate or 0.0):.2%}, 90% upper bound "
                  f"{spread_of(sp.bound or 0.0):.2%} ({sp.pairs} pairs)", flush=True)
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if a.busy else None
    rows: list[dict] = []
    t0 = time.monotonic()
    try:
        for i in range(a.seeds):
            for j, sc in enumerate(scenarios):
                seed = a.first_seed + i + 1000 * scenarios[:j].count(sc)  # a scenario listed twice: other seeds
                r = one_run(out, seed, None if sc == "clean" else sc, a.policy)
                row = record(out, sc, seed, a.busy, r)
                rows.append(row)
                print(f"[{(time.monotonic() - t0) / 60:5.1f} min] seed {seed} {sc}: {row['outcome']} "
                      f"after {row['rounds']} rounds, ratio {row['ratio'] if row['ratio'] is not None else float('nan'):.3f}"
                      + (f" ERROR {r['error']}" if "error" in r else ""), flush=True)
    finally:
        if burner is not None:
            burner.kill()
    table(rows)


if __name__ == "__main__":
    main()
