"""A/A noise of the performance gate's decode measures on this machine: σ (the spread of one
request pair's log ratio) and τ (how far two launches of one build differ), measured, not assumed.

    python benchmarks/perf_noise.py [--launches 4] [--pairs 96] [--model DIR]
    python benchmarks/perf_noise.py --fault decode-slowdown=5 [--alone]   # what a fault really costs
    python benchmarks/perf_noise.py --command "bash scripts/vllm_cpu.sh 0.31.0 --port {port}" \
        [--dump requests.jsonl]                                           # another engine's noise

Each launch pair is two fresh `gatekeeper serve` processes of the same build (the optimized path,
no faults). At concurrency 1 the sides take turns request by request (A B, B A, ...), as the gate
does; each request streams 32 output tokens with ignore_eos. Per request and per side:

- `tpot`: (end − first token) / (tokens − 1), vLLM's TPOT, the gate's decode figure today;
- `median_itl`: the median gap between output chunks (robust to a contention spike);
- `cpu_per_token`: the server process's CPU time (the scheduler's nanosecond on-CPU time of
  its threads, `/proc/<pid>/task/*/schedstat`, as the gate's `gatekeeper/perf/cpu.py` reads it)
  over the request, per output token — blind to run-queue waiting and steal, and to regressions that wait (sleeps,
  locks, I/O) rather than compute.

With `--fault F`, side B is launched with that fault: the mean log ratio is then what the fault
costs (printed as a percentage with its 95% interval, e.g. decode-slowdown=5 should cost 5% of
tpot and median_itl); with `--alone` each request is served with only its side on the CPU: the
other side's server is stopped (SIGSTOP) while it runs and continued after, and the sides still
alternate request by request, so the machine's drift cancels as it does interleaved. (Measuring
A's requests all with only A up, then B's with only B up, as `--alone` did until 2026-12-07, left
the launch means scattered by sd 9% on this VM: the machine drifts over the half minute between
the two.)

With `--command CMD` both sides are launches of CMD (a launch target's command template, `{port}`
filled in, e.g. docs/vllm.md's) instead of the bundled engine, serving `--served-model`; its CPU time is
its whole process group's (`perf/cpu.py`'s CpuMeter), and `--alone` stops the whole group.
`--dump FILE` writes every request pair as a JSON line (launch pair, index, both sides' measures), for
looking at the shape of the spread (a heavy tail, a bimodal launch) rather than only its sd.
The sides take turns request by request without waiting for the other to go quiet, so an engine
that keeps working after it answers is measured beside the other's spin (vLLM's worker polls for a
second; the gate waits, `gatekeeper/perf/quiet.py`). vLLM 0.31.0 so (2026-12-07, 2 launch pairs of
96, 32-token requests of ~0.18 s): e2e log ratio per request pair sd 0.43–0.46, not heavy-tailed
(excess kurtosis 0.7–1.7, robust sd from the MAD 0.32–0.41); over 4-request blocks the sum (the
gate's figure), the median, the mean log and a 25%-trimmed mean spread alike (sd 0.25–0.27 and
0.29–0.33 in the two launch pairs) — a robust block figure would not narrow vLLM's spread, which
is broad rather than a few outliers.

Printed per launch pair and measure: the mean log ratio (B/A; a launch pair's systematic
difference) and the sd of the per-pair log ratios (σ); then over launch pairs, the sd of the
means, which estimates sqrt(τ²·2 + σ²/n) and so τ. The design these feed is in
shared/reference/statistics-review.md §2.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
from scipy.stats import t as t_dist

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))

from server_util import running_server  # noqa: E402

from gatekeeper.perf.cpu import CpuMeter  # noqa: E402
from gatekeeper.perf.workload import Workload  # noqa: E402
from gatekeeper.targets.process import ProcessTarget  # noqa: E402
from gatekeeper.targets.spec import parse_target  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
GK_TINY = ROOT / "gatekeeper" / "models" / "gk-tiny"
MEASURES = ("tpot", "median_itl", "cpu_per_token", "e2e")


@dataclass
class Side:
    """One launched server: where it answers, what it serves, its CPU meter, and how to pause it."""

    url: str
    model: str
    meter: CpuMeter
    signal_all: Callable[[int], None]  # sends a signal to the server's processes


def one(http: httpx.Client, side: Side, body: dict) -> dict[str, float] | None:
    """One streamed completion, timed chunk by chunk, with the server's CPU time around it (None
    when the server coalesced the tokens into fewer than three events)."""
    c0, t0 = side.meter.seconds(), time.perf_counter()
    chunks: list[float] = []
    with http.stream("POST", side.url + "/v1/completions", json={**body, "model": side.model, "stream": True}) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                event = json.loads(line[6:])
                if event.get("choices"):  # a token's event, even one whose text is empty (a partial UTF-8 byte)
                    chunks.append(time.perf_counter())
    end, c1 = time.perf_counter(), side.meter.seconds()
    if len(chunks) < 3:  # the server sent the tokens in fewer events (coalesced): no gaps to measure
        return None
    n = body["max_tokens"]
    gaps = [b - a for a, b in zip(chunks, chunks[1:])]
    return {"tpot": (end - chunks[0]) / (n - 1), "median_itl": statistics.median(gaps),
            "cpu_per_token": max(c1 - c0, 1e-6) / n, "e2e": end - t0}


def _measure(http: httpx.Client, sides: dict[str, Side], requests: list, warmup: list,
             alone: bool = False) -> dict[str, list]:
    """Per side, per request (in order): its measures, or None; the sides take turns A B, B A, ...
    With `alone`, the other sides' servers are stopped (SIGSTOP) while a side answers."""
    for side in sides.values():  # warm-up, unmeasured
        for r in warmup:
            one(http, side, r.body)
    got: dict[str, list] = {name: [] for name in sides}
    for j, r in enumerate(requests):
        for name in (sorted(sides) if j % 2 == 0 else sorted(sides, reverse=True)):
            others = [side for other, side in sides.items() if other != name] if alone else []
            for other in others:
                other.signal_all(signal.SIGSTOP)
            try:
                got[name].append(one(http, sides[name], r.body))
            finally:  # a stopped server would not even see the SIGTERM that ends it
                for other in others:
                    other.signal_all(signal.SIGCONT)
    return got


@contextlib.contextmanager
def bundled(model: Path, *args: str) -> Iterator[Side]:
    """A fresh `gatekeeper serve` of the bundled engine's optimized path (with `args`)."""
    with running_server(model, "--profile", "optimized", *args) as server:
        pid = server.proc.pid
        yield Side(server.url, "gk-tiny", CpuMeter.of_process(pid), lambda sig: os.kill(pid, sig))


@contextlib.contextmanager
def launched(command: str, model: str, role: str, ready_timeout_s: float, log_dir: str) -> Iterator[Side]:
    """A fresh launch of `command` (a launch target's template), as the gate starts one."""
    target = ProcessTarget(role, parse_target({"kind": "launch", "command": command, "model": model,
                                               "ready_timeout_s": ready_timeout_s}))
    try:
        started = target.start(log_dir)
        pgid = target.process_group()
        if not started.ready or pgid is None:
            raise SystemExit(f"perf_noise: {role} did not come up: {started.error}")
        yield Side(started.base_url, model, CpuMeter(pgid), lambda sig: os.killpg(pgid, sig))
    finally:
        target.stop()


def launch_pair(pairs: int, seed: int, args: argparse.Namespace, log_dir: str) -> tuple[dict[str, list[float]], list[dict]]:
    """Two fresh launches of one build (B with `args.fault`, if any); per measure, the per-request-pair
    log ratios (B over A), and the pairs' raw measures. Interleaved request by request; with
    `args.alone` the side not answering is stopped meanwhile."""
    workload = Workload()
    requests, warmup = workload.requests(pairs, seed), workload.requests(4, seed + 1000)
    with contextlib.ExitStack() as stack, httpx.Client(timeout=300) as http:
        if args.command:
            a = stack.enter_context(launched(args.command, args.served_model, "a", args.ready_timeout, log_dir))
            b = stack.enter_context(launched(args.command, args.served_model, "b", args.ready_timeout, log_dir))
        else:
            a = stack.enter_context(bundled(args.model))
            b = stack.enter_context(bundled(args.model, *(("--fault", args.fault) if args.fault else ())))
        for side in (a, b):
            side.meter.refresh()  # the engine's workers, forked after ready
        got = _measure(http, {"A": a, "B": b}, requests, warmup, args.alone)
    ratios: dict[str, list[float]] = {m: [] for m in MEASURES}
    raw = []
    for i, (ra, rb) in enumerate(zip(got["A"], got["B"])):
        if ra is None or rb is None:
            continue  # counted by what is missing from `pairs`
        raw.append({"launch_pair": seed, "index": i, "A": ra, "B": rb})
        for m in MEASURES:
            ratios[m].append(math.log(rb[m] / ra[m]))
    return ratios, raw


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--launches", type=int, default=4, help="launch pairs (fresh processes each)")
    ap.add_argument("--pairs", type=int, default=96, help="request pairs per launch pair, at concurrency 1")
    ap.add_argument("--model", type=Path, default=GK_TINY)
    ap.add_argument("--fault", help="launch side B with this fault (e.g. decode-slowdown=5): what it costs is printed")
    ap.add_argument("--alone", action="store_true", help="each request served with the other side's server stopped (SIGSTOP)")
    ap.add_argument("--command", help="launch both sides with this command template ({port} filled in) instead of the bundled engine")
    ap.add_argument("--served-model", default="gk-tiny", help="the model name the launched server serves (with --command)")
    ap.add_argument("--ready-timeout", type=float, default=600.0, help="seconds a launch may take to become ready (with --command)")
    ap.add_argument("--dump", type=Path, help="write every request pair's measures to this JSONL file")
    args = ap.parse_args()
    if args.command and args.fault:
        ap.error("--fault is the bundled engine's switch: not with --command")
    if args.command and "{port}" not in args.command:
        ap.error("--command needs {port} in it")
    mode = "the other side stopped meanwhile" if args.alone else "both running"
    engine = args.command or "the bundled engine"
    print(f"{engine}; side B: {args.fault or 'the same build'}; interleaved A B, B A, {mode}; "
          f"{args.launches} launch pair(s) x {args.pairs} request pairs")
    means: dict[str, list[float]] = {m: [] for m in MEASURES}
    sds: dict[str, list[float]] = {m: [] for m in MEASURES}
    log_dir = tempfile.mkdtemp(prefix="perf-noise-") if args.command else ""
    if log_dir:
        print(f"launch logs in {log_dir}")
    with contextlib.ExitStack() as stack:
        dump = stack.enter_context(open(args.dump, "w", encoding="utf-8")) if args.dump else None
        for k in range(args.launches):
            t0 = time.perf_counter()
            ratios, raw = launch_pair(args.pairs, k, args, log_dir)
            if dump:
                dump.writelines(json.dumps(pair) + "\n" for pair in raw)
                dump.flush()
            row = []
            for m in MEASURES:
                means[m].append(statistics.fmean(ratios[m]))
                sds[m].append(statistics.stdev(ratios[m]))
                row.append(f"{m} mean {means[m][-1]:+.4f} sd {sds[m][-1]:.4f}")
            print(f"launch pair {k + 1} ({len(ratios['tpot'])} request pairs): " + "; ".join(row)
                  + f"  ({time.perf_counter() - t0:.0f} s)", flush=True)
    print()
    print(f"{'measure':14s} {'σ (median sd per pair)':>24s} {'sd of launch means':>20s} {'τ estimate':>12s}")
    for m in MEASURES:
        sigma = statistics.median(sds[m])
        spread = statistics.stdev(means[m]) if len(means[m]) > 1 else float("nan")
        # Var(mean of one launch pair) = 2τ² + σ²/n: what is left after the within-launch part is τ.
        tau2 = (spread ** 2 - sigma ** 2 / args.pairs) / 2 if not math.isnan(spread) else float("nan")
        tau = math.sqrt(tau2) if tau2 > 0 else 0.0
        print(f"{m:14s} {sigma:24.4f} {spread:20.4f} {tau:12.4f}")
    if args.fault:
        print()
        print(f"what {args.fault} costs side B (mean over launch pairs of exp(mean log ratio) - 1, "
              "95% interval: Student's t over the launch means, or the pairs' spread when one launch):")
        for m in MEASURES:
            n = len(means[m])
            centre = statistics.fmean(means[m])
            half = (t_dist.ppf(0.975, n - 1) * statistics.stdev(means[m]) / math.sqrt(n) if n > 1
                    else 1.96 * sds[m][0] / math.sqrt(args.pairs))  # Student's t over the launch means
            print(f"  {m:14s} {math.expm1(centre):+7.2%}  [{math.expm1(centre - half):+7.2%}, {math.expm1(centre + half):+7.2%}]")


if __name__ == "__main__":
    main()
