"""Gate 5 on the bundled pair, over many seeds: false ROLLBACKs of a clean candidate, and how
often (and how fast) the two faults only real traffic shows are caught.

    python benchmarks/shadow_canary.py [--seeds 20] [--offline-seeds 3] [--candidate sporadic-corruption=0.03 ...]

Per seed s: `gatekeeper run --gates startup,shadow --seed s --candidate-opt seed=s` under the
default policy (the stage selection and the engine's fault draws change with s), each run
starting its own bundled reference and its replica as the default run does, for three candidates: clean, `sporadic-corruption=0.03`,
`tool-overflow` (`--candidate`, repeatable, runs only those). Printed per candidate: verdicts, the rules that fired, the slice named, the
requests replayed until the sequential test fired (mean), and gate 5's wall time. Then, for
`--offline-seeds` seeds, gates 1–4 on each faulted candidate: the faults are meant to pass them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))

from gatekeeper.gates.shadow.checks import STAGE_PREFIX, StageFinding  # noqa: E402
from gatekeeper.traffic.rules import PAIR_RULES  # noqa: E402
from server_util import running_server  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
GK_TINY = ROOT / "gatekeeper" / "models" / "gk-tiny"
CANDIDATES = {"clean": [], "sporadic-corruption=0.03": ["--candidate-fault", "sporadic-corruption=0.03"],
              "tool-overflow": ["--candidate-fault", "tool-overflow"]}


def run(args: list[str], out: Path) -> dict:
    """One gatekeeper run; its summary.json."""
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "gatekeeper.cli", "run", "--out", str(out), *args], cwd=ROOT,
                   capture_output=True, text=True, timeout=1800, check=False)
    summary = sorted(out.glob("*/summary.json"))[-1]
    return json.loads(summary.read_text())


def shadow_facts(summary: dict) -> dict:
    """Verdict, fired rules, the requests replayed (a stage stops at the first firing, so for a
    ROLLBACK this is what the sequential test needed, to the chunk), the failed pair rules'
    reasons (the slice they name), gate 5's time."""
    gate = next((g for g in summary["gates"] if g["id"] == "shadow"), None)
    checks = gate["checks"] if gate else []
    fired = [c["id"].removeprefix("shadow.rule.") for c in checks if c["id"].startswith("shadow.rule.") and c["status"] == "FAIL"]
    pair_rules = {f"shadow.rule.{name}" for name in PAIR_RULES}
    needed = "; ".join(c["reason"] for c in checks if c["id"] in pair_rules and c["status"] == "FAIL")
    replayed = sum(StageFinding.from_metrics(c["metrics"]).requests for c in checks if c["id"].startswith(STAGE_PREFIX))
    return {"verdict": summary["verdict"], "fired": fired, "replayed": replayed, "reason": needed,
            "gate_s": gate["duration_s"] if gate else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--offline-seeds", type=int, default=3)
    ap.add_argument("--candidate", action="append", choices=list(CANDIDATES), help="repeatable (default: all three)")
    args = ap.parse_args()
    candidates = {name: CANDIDATES[name] for name in args.candidate or CANDIDATES}
    work = Path(tempfile.mkdtemp(prefix="gk-shadow-bench-"))
    results: dict[str, list[dict]] = {name: [] for name in candidates}
    with running_server(GK_TINY, "--profile", "reference") as ref:
        for seed in range(args.seeds):  # interleaved: the machine's drift hits every candidate alike
            for name, extra in candidates.items():
                t0 = time.perf_counter()
                # The run starts its own bundled reference, as the default run does, so gate 5's twin
                # pass goes to a second launch of it (twin: replica); the offline runs below share `ref`.
                s = run(["--gates", "startup,shadow", "--seed", str(seed),
                         "--candidate-opt", f"seed={seed}", *extra], work / name.replace("=", "_") / str(seed))
                facts = shadow_facts(s)
                facts["run_s"] = time.perf_counter() - t0
                results[name].append(facts)
                print(f"seed {seed:2d} {name:26s} {facts['verdict']:8s} fired={','.join(facts['fired']) or '-':40s} "
                      f"replayed={facts['replayed']:4d} gate5={facts['gate_s']:.1f}s", flush=True)
        offline: dict[str, Counter] = {}
        for name, extra in candidates.items():
            if not extra:
                continue
            offline[name] = Counter()
            for seed in range(args.offline_seeds):
                s = run(["--reference", ref.url, "--gates", "startup,numerics,golden,longctx", "--seed", str(seed),
                         "--candidate-opt", f"seed={seed}", *extra], work / "offline" / name.replace("=", "_") / str(seed))
                offline[name][s["verdict"]] += 1
                print(f"offline seed {seed} {name}: gates 1-4 {s['verdict']} {s['reasons'][:2]}", flush=True)
    print("\n== gate 5 over", args.seeds, "seeds (default policy) ==")
    for name, rows in results.items():
        verdicts = Counter(r["verdict"] for r in rows)
        fired = Counter(f for r in rows for f in r["fired"])
        stopped = [r["replayed"] for r in rows if r["verdict"] == "ROLLBACK"]
        named = sum("tenant=agents" in r["reason"] for r in rows)
        budget = f" (a clean run replays {max(r['replayed'] for r in results['clean'])})" if results.get("clean") else ""
        print(f"{name:26s} verdicts {dict(verdicts)}; rules fired {dict(fired)}; "
              f"requests replayed when it rolled back: mean {statistics.mean(stopped):.0f}{budget}"
              if stopped else f"{name:26s} verdicts {dict(verdicts)}; rules fired {dict(fired)}")
        if name == "tool-overflow":
            print(f"{'':26s} slice tenant=agents named in {named}/{len(rows)}")
        print(f"{'':26s} gate 5 time: median {statistics.median(r['gate_s'] for r in rows):.1f} s, "
              f"max {max(r['gate_s'] for r in rows):.1f} s")
    for name, verdicts in offline.items():
        print(f"gates 1-4 on {name}: {dict(verdicts)} over {args.offline_seeds} seeds")


if __name__ == "__main__":
    main()
