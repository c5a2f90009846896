"""Other budgets judged on the same measurements, and what a budget would cost to decide.

    python benchmarks/perf_budget_rejudge.py FILE [--budget cpu_s_per_token@c1=0.025 ...]
                                             [--target decode-slowdown=5]

FILE is the JSONL `benchmarks/perf_gate_power.py --json` appends (one line per measurement, with
every primary comparison's worse-by, interval, Holm-adjusted p and noise floor). Each `--budget`
design (metric[@level]=fraction, comma-separated within a design) replaces the policy's budgets and
re-applies the gate's rule (`Comparison.excluded`, `regressed`: the threshold is the budget
widened by the noise floor's drift up to `NOISE_CAP` budgets) — the p-values do not depend on the
budget, so the shares are what the gate would have said on these very measurements. Printed per
design and candidate: FAIL / PASS / undecided shares and the metrics that failed.

Then, per metric and level, the noise the clean measurements show — the standard error per
block pair s (from the interval, less the launch term 2τ²/K) and τ — and, for the `--target`
candidate's median cost δ, the smallest budget B and block pairs n (at K launches per side) for
which a normal approximation gives both ≥ 90% decided clean runs (B ≥ (t + z₀.₉₀)·se) and ≥ 95%
FAIL (δ − B ≥ z₀.₉₅·se): se ≤ δ / (t + z₀.₉₀ + z₀.₉₅).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gatekeeper.perf.compare import NOISE_CAP  # noqa: E402


def parse_design(text: str) -> dict[str, float]:
    """"cpu_s_per_token@c1=0.025,tpot_p50_s=0.1" → {"cpu_s_per_token@c1": 0.025, "tpot_p50_s": 0.1}."""
    out = {}
    for part in filter(None, text.split(",")):
        key, _, value = part.partition("=")
        out[key.strip()] = float(value)
    return out


def limit_for(design: dict[str, float], row: dict) -> float:
    """The budget a design gives this comparison (level-specific first, then the metric's, else the policy's)."""
    return design.get(f"{row['metric']}@{row['level']}", design.get(row["metric"], row["limit"]))


def outcome(line: dict, design: dict[str, float]) -> tuple[str, list[str]]:
    """FAIL / PASS / undecided for one measurement under `design`, with the failed comparisons."""
    failed, decided = [], True
    for row in line["comparisons"]:
        if row["worse_by"] is None:
            decided = False
            continue
        limit = limit_for(design, row)
        noise = abs(row["noise_ratio"] - 1) if row["noise_ratio"] is not None else 0.0
        threshold = max(limit, min(noise, NOISE_CAP * limit))
        if row["p_adj"] is not None and row["p_adj"] < line["alpha"] and row["worse_by"] > threshold:
            failed.append(f"{row['level']}.{row['metric']}")
        decided = decided and row["worse_bound"] is not None and row["worse_bound"] <= threshold
    return ("FAIL" if failed else "PASS" if decided else "undecided"), failed


def pair_se(row: dict, confidence: float, launches: int) -> tuple[float, float]:
    """(the standard error of one block pair's log ratio, τ) recovered from a comparison's interval."""
    lo, hi = row["ci"]
    se = (math.log(hi) - math.log(lo)) / (2 * stats.t.ppf((1 + confidence) / 2, row["pairs"] - 1))
    var_tau = 2 * math.log1p(row["spread"]) ** 2 / launches
    return math.sqrt(max(se * se - var_tau, 0.0) * row["pairs"]), row["spread"]


def noise_table(lines: list[dict], target: str) -> None:
    """Per metric and level: s, τ, the target's median cost and what deciding it would take."""
    clean = [ln for ln in lines if ln["candidate"] == "clean"]
    slow = [ln for ln in lines if ln["candidate"] == target]
    if not clean:
        return
    conf, z90, z95 = clean[0]["confidence"], stats.norm.ppf(0.90), stats.norm.ppf(0.95)
    print(f"\nnoise in {len(clean)} clean measurements; target {target} ({len(slow)} measurements)")
    print(f"{'comparison':28s} {'pairs':>5s} {'s/pair':>7s} {'tau':>6s} {'clean sd':>8s} {'delta':>7s}  "
          "smallest budget and block pairs for 95% FAIL + 90% decided clean, at K launches per side")
    keys = [(r["level"], r["metric"]) for r in clean[0]["comparisons"] if r["ci"] is not None]
    for level, metric in keys:
        rows = [r for ln in clean for r in ln["comparisons"] if (r["level"], r["metric"]) == (level, metric) and r["ci"]]
        s = statistics.median(pair_se(r, conf, ln["launches"])[0] for ln in clean for r in ln["comparisons"]
                              if (r["level"], r["metric"]) == (level, metric) and r["ci"])
        tau, pairs = rows[0]["spread"], rows[0]["pairs"]
        sd = statistics.stdev(r["worse_by"] for r in rows) if len(rows) > 1 else float("nan")
        costs = [r["worse_by"] for ln in slow for r in ln["comparisons"] if (r["level"], r["metric"]) == (level, metric)]
        delta = statistics.median(c for c in costs if c is not None) if costs else None
        plans = []
        if delta and delta > 0:
            t = stats.t.ppf((1 + conf) / 2, max(pairs - 1, 2))
            se_max = math.log1p(delta) / (t + z90 + z95)
            for k in (2, 4, 8):
                rest = se_max ** 2 - 2 * math.log1p(tau) ** 2 / k
                n = math.ceil(s * s / rest) if rest > 0 else None
                budget = (t + z90) * se_max
                plans.append(f"K={k}: " + (f"B≈{budget:.1%}, n≥{n}" if n else "no n (τ alone too wide)"))
        print(f"{level + '.' + metric:28s} {pairs:5d} {s:7.3f} {tau:6.2%} {sd:8.2%} "
              f"{'' if delta is None else f'{delta:+.1%}':>7s}  {'; '.join(plans)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", type=Path)
    ap.add_argument("--budget", action="append", default=[], help="a design: metric[@cN]=fraction,...")
    ap.add_argument("--target", default="decode-slowdown=5")
    args = ap.parse_args()
    lines = [json.loads(x) for x in args.file.read_text().splitlines() if x.strip()]
    by_candidate: dict[str, list[dict]] = defaultdict(list)
    for ln in lines:
        by_candidate[ln["candidate"]].append(ln)
    for text in ["", *args.budget]:
        design = parse_design(text)
        print(f"\ndesign: {text or 'the policy as measured'}")
        print(f"{'candidate':22s} {'n':>3s} {'FAIL':>6s} {'PASS':>6s} {'undecided':>9s}  failed metrics")
        for name, rows in by_candidate.items():
            judged = [outcome(ln, design) for ln in rows]
            share = {o: sum(1 for j, _ in judged if j == o) / len(judged) for o in ("FAIL", "PASS", "undecided")}
            which: dict[str, int] = defaultdict(int)
            for _, failed in judged:
                for f in failed:
                    which[f] += 1
            print(f"{name:22s} {len(rows):3d} {share['FAIL']:6.0%} {share['PASS']:6.0%} {share['undecided']:9.0%}  "
                  f"{dict(which) or '-'}")
    noise_table(lines, args.target)


if __name__ == "__main__":
    main()
