"""The performance gate's false alarms and power on the bundled engines, over many seeds.

    python benchmarks/perf_gate_power.py [--seeds 20] [--candidates clean,decode-slowdown=23,...]

One baseline server (the optimized path, no faults) and one server per candidate are started
once. Per seed s and candidate, the gate's own measurement and judgement (`measure_level`,
`judge`, `regressed` under the default policy's performance settings, seed s: other requests,
other block order) run against the baseline, one target at a time; a candidate "FAILs" when any
budgeted metric at any level regresses by the gate's rule. Printed per candidate: the FAIL rate,
which metrics failed, the requests per side the measurement took, the median worse-by of
output tokens/s and TPOT at each level, and the wall time. The capacity sweep is not part of
the verdict and is not run here.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from server_util import running_server  # noqa: E402

from gatekeeper.config.policy import load_policy  # noqa: E402
from gatekeeper.gates.performance.gate import judge, regressed  # noqa: E402
from gatekeeper.gates.registry import settings_types  # noqa: E402
from gatekeeper.gates.performance.measure import measure_level, warm_up  # noqa: E402
from gatekeeper.perf.loadgen import LoadTarget  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
GK_TINY = ROOT / "gatekeeper" / "models" / "gk-tiny"
DEFAULT = "clean,decode-slowdown=23,decode-slowdown=5,silent-fallback"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--candidates", default=DEFAULT)
    ap.add_argument("--policy", default=str(ROOT / "gates" / "default.yaml"))
    args = ap.parse_args()
    s = load_policy(args.policy, settings_types()).settings("performance")
    names = args.candidates.split(",")
    with ExitStack() as stack:
        base = stack.enter_context(running_server(GK_TINY, "--profile", "optimized"))
        servers = {n: stack.enter_context(running_server(GK_TINY, "--profile", "optimized",
                                                         *([] if n == "clean" else ["--fault", n])))
                   for n in names}
        baseline = LoadTarget(base.url, "gk-tiny")
        workload = s.workload()
        for n in names:
            warm_up({"baseline": baseline, "candidate": LoadTarget(servers[n].url, "gk-tiny")},
                    workload.requests(s.warmup_requests, 1))
        outcomes: dict[str, list[dict]] = {n: [] for n in names}
        for seed in range(args.seeds):
            for n in names:  # candidates interleaved within a seed: drift hits all of them
                targets = {"baseline": baseline, "candidate": LoadTarget(servers[n].url, "gk-tiny")}
                t0 = time.perf_counter()
                levels = [measure_level(targets, lv, s.pairs_at(lv), s.requests_per_block(lv), workload, seed, s.slo(),
                                        lambda m: None) for lv in s.levels]
                judged = judge(levels, s)
                failed = [f"{c.level}.{c.metric}" for c, p in judged if regressed(c, p, s.alpha)]
                per_side = sum(len(r.measured) for lv in levels for r in lv.results["candidate"])
                worse = {f"{c.level}.{c.metric}": c.worse_by for c, _ in judged}
                outcomes[n].append({"failed": failed, "per_side": per_side, "worse": worse,
                                    "wall": time.perf_counter() - t0})
                print(f"seed {seed:2d} {n:22s} {'FAIL' if failed else 'pass'} {','.join(failed) or '-':60s} "
                      f"{per_side} req/side {time.perf_counter() - t0:5.1f}s", flush=True)
    print()
    print(f"{'candidate':22s} {'FAIL rate':>10s} {'req/side':>9s} {'median worse-by per metric':s}")
    for n in names:
        rows = outcomes[n]
        rate = sum(1 for r in rows if r["failed"]) / len(rows)
        which = Counter(f for r in rows for f in r["failed"])
        keys = list(rows[0]["worse"])
        medians = ", ".join(f"{k} {statistics.median(r['worse'][k] or 0.0 for r in rows):+.1%}" for k in keys)
        print(f"{n:22s} {rate:>9.0%} {rows[0]['per_side']:>9d}  {medians}")
        if which:
            print(f"{'':22s} failed metrics: {dict(which)}")
        print(f"{'':22s} wall per measurement: median {statistics.median(r['wall'] for r in rows):.1f} s")


if __name__ == "__main__":
    main()
