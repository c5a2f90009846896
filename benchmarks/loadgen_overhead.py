"""The load generator's own overhead against a fast loopback server, beside guidellm's, in one run:
at 1, 64 and 256 concurrent streams, the achieved request rate of each (and the ratio ours /
guidellm's) and our p99 scheduling delay.

    pip install guidellm        # anywhere: found as `guidellm` on PATH, or pass --guidellm PATH
    python benchmarks/loadgen_overhead.py [--rounds 2] [--concurrency 1 64 256]

The server is benchmarks/fast_server.py in its own process (uvloop when installed, pre-encoded
chunks). Both generators stream the same requests to it (completions, ~16 prompt words, 16
one-token chunks, usage chunk, [DONE]) with no server delay, so the request rate is the client's
own ceiling. Rounds alternate ours and guidellm (A B A B) so drift on a shared machine hits both;
guidellm runs all concurrencies in one invocation per round because it takes ~20 s to start.

- achieved rate: completed requests per second in steady state, computed the same way for both
  from each request's end time: the first 10% of completions (connection set-up, ramp-up) are
  cut, then (completions after that) / (time from there to the last one). guidellm's own figure
  (completed / its measured window) is printed beside it.
- scheduling delay (ours only): a `rate` profile at C / 1.6 s with at most C in flight, against
  streams the server paces like a busy engine (32 chunks 50 ms apart: 1.6 s each), so ~C
  streams are open; for each request, how late its headers reached the socket after it was due
  (the timer firing late plus the client's own work before the write; waiting for a free slot is
  not counted): the generator's `lateness_s`, p99 over the run (8 s, at least 10 requests).
  Beside it, the event loop's lag in that run: a 1 ms ticker in the same loop, p99 of how late
  it woke. `--itl-ms` / `--stream-tokens` change the pace.
- saturated lateness: in the request-rate runs (no server delay, so the client is the bottleneck
  by design), p99 of the time from a stream's previous answer ending to its next request's
  headers written, the worst round; above 10 ms the generator marks such a run `client_bound`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Coroutine, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from gatekeeper.perf.loadgen import LoadProfile, LoadRequest, LoadResult, LoadTarget, run_load, run_load_async

HERE = Path(__file__).resolve().parent
TOKENIZER = HERE.parent / "gatekeeper" / "models" / "gk-tiny"  # guidellm's synthetic prompts need one, offline
PROMPT = " ".join(["word"] * 16)
TOKENS = 16
RATE_RUN_S = 8.0
DEFAULT_REQUESTS = {1: 300, 64: 2000, 256: 3000}
T = TypeVar("T")


@contextmanager
def fast_server(*args: str) -> Iterator[str]:
    """Start benchmarks/fast_server.py on a free loopback port; yield its base URL."""
    proc = subprocess.Popen([sys.executable, str(HERE / "fast_server.py"), "--port", "0", *args],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("listening on "):
            raise SystemExit(f"fast_server did not start: {line!r}")
        yield line.split()[-1]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def steady_rate(ends: Sequence[float]) -> float:
    """Completions per second after the first 10% of them (same rule for both generators)."""
    ends = sorted(ends)
    k = len(ends) // 10
    return (len(ends) - 1 - k) / (ends[-1] - ends[k]) if len(ends) - 1 > k and ends[-1] > ends[k] else 0.0


def p99(values: Sequence[float]) -> float:
    """The 99th percentile (nearest rank); 0 for no values."""
    v = sorted(values)
    return v[min(len(v) - 1, int(0.99 * len(v)))] if v else 0.0


def failures(result: LoadResult) -> int:
    """Records that did not come back as a complete answer."""
    return sum(not r.ok for r in result.records)


def ours_concurrent(url: str, concurrency: int, n: int) -> tuple[float, float, int]:
    """Our achieved rate at `concurrency` streams, its p99 lateness (a slot free to the next
    request's headers written) and the number of failed requests."""
    reqs = [LoadRequest({"prompt": PROMPT, "max_tokens": TOKENS})] * n
    result = run_load(LoadTarget(url, "fast"), reqs, LoadProfile("concurrent", concurrency=concurrency))
    return steady_rate([r.end_s for r in result.records if r.ok]), result.lateness_p99_s, failures(result)


async def with_loop_lag(coro: Coroutine[Any, Any, T], period_s: float = 0.001) -> tuple[T, list[float]]:
    """Run `coro` beside a ticker that sleeps `period_s` at a time; return its result and how late
    each tick woke."""
    lags: list[float] = []
    done = asyncio.Event()

    async def tick() -> None:
        while not done.is_set():
            due = time.perf_counter() + period_s
            await asyncio.sleep(period_s)
            lags.append(max(0.0, time.perf_counter() - due))

    ticker = asyncio.create_task(tick())
    try:
        return await coro, lags
    finally:
        done.set()
        await ticker


def ours_scheduled(url: str, concurrency: int, itl_ms: float, tokens: int) -> dict[str, float]:
    """The scheduling-delay run: a `rate` profile keeping ~`concurrency` paced streams open."""
    rate = concurrency / (itl_ms * tokens / 1000)
    n = max(10, int(rate * RATE_RUN_S))
    body = {"prompt": PROMPT, "max_tokens": tokens, "x_delay_ms": itl_ms}
    profile = LoadProfile("rate", concurrency=concurrency, rate=rate, warmup=min(concurrency, n // 10))
    result, lags = asyncio.run(with_loop_lag(run_load_async(LoadTarget(url, "fast"), [LoadRequest(body)] * n, profile)))
    measured = result.measured
    window = max(r.end_s for r in measured) - min(r.sent_s for r in measured)
    return {"rate": rate, "n": n, "lateness_p99_ms": result.lateness_p99_s * 1000, "loop_lag_p99_ms": p99(lags) * 1000,
            "in_flight": sum(r.e2e_s for r in measured) / window, "client_bound": result.client_bound,
            "failed": failures(result)}


def guidellm_round(exe: str, url: str, concurrencies: Sequence[int], counts: Sequence[int], tmp: Path) -> dict[int, dict[str, float]]:
    """One guidellm invocation, a concurrent benchmark per concurrency; its rates per concurrency."""
    out = tmp / f"guidellm-{time.monotonic_ns()}.json"
    scenario = {"spec": {
        "backend": {"kind": "openai_http", "target": url, "model": "fast", "request_format": "/v1/completions"},
        "profile": {"kind": "concurrent", "streams": list(concurrencies)},
        "constraints": [{"kind": "max_requests", "count": list(counts)}],
        "data": [{"kind": "synthetic_text", "prompt_tokens": TOKENS, "output_tokens": TOKENS}],
        "tokenizer": {"kind": "hf_auto", "model": str(TOKENIZER)},
        "outputs": [{"kind": "json", "path": str(out)}],
    }}
    path = tmp / "scenario.json"
    path.write_text(json.dumps(scenario))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.run([exe, "run", "--scenario", str(path), "--disable-console"], env=env,
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0 or not out.exists():
        raise SystemExit(f"guidellm failed ({proc.returncode}):\n{(proc.stdout + proc.stderr)[-3000:]}")
    figures = {}
    for bench in json.loads(out.read_text())["benchmarks"]:
        ok = bench["requests"]["successful"]
        figures[int(bench["config"]["strategy"]["streams"])] = {
            "rate": steady_rate([r["request_end_time"] for r in ok]),
            "own": bench["metrics"]["requests_per_second"]["successful"]["mean"],
            "failed": len(bench["requests"]["errored"]) + len(bench["requests"]["incomplete"]),
        }
    return figures


def guidellm_command(given: str | None) -> tuple[str, str]:
    """guidellm's executable and version, or exit saying how to install it."""
    exe = given or shutil.which("guidellm")
    if not exe or not Path(exe).exists():
        raise SystemExit("guidellm not found: `pip install guidellm` (into any environment; it is not a gatekeeper "
                         "dependency), then put `guidellm` on PATH or pass --guidellm /path/to/bin/guidellm")
    version = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=120).stdout.strip()
    return exe, version


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--guidellm", default=None, help="path to the guidellm executable (default: on PATH)")
    ap.add_argument("--rounds", type=int, default=2, help="ours / guidellm alternations")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 64, 256])
    ap.add_argument("--requests", type=int, nargs="+", default=None, help="requests per concurrency (default 300 2000 3000)")
    ap.add_argument("--itl-ms", type=float, default=50.0, help="chunk pace of the scheduling-delay run's streams")
    ap.add_argument("--stream-tokens", type=int, default=32, help="chunks per stream in the scheduling-delay run")
    args = ap.parse_args()
    exe, version = guidellm_command(args.guidellm)
    counts = args.requests or [DEFAULT_REQUESTS.get(c, max(300, 10 * c)) for c in args.concurrency]
    if len(counts) != len(args.concurrency):
        raise SystemExit("--requests needs one count per --concurrency")
    print(f"{version}; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start")
    ours: dict[int, list[float]] = {c: [] for c in args.concurrency}
    busy: dict[int, list[float]] = {c: [] for c in args.concurrency}
    theirs: dict[int, list[dict[str, float]]] = {c: [] for c in args.concurrency}
    failed = 0
    with fast_server() as url, tempfile.TemporaryDirectory(prefix="gk-loadgen-") as tmp:
        ours_concurrent(url, 8, 200)  # warm the server and this process (imports, first connections)
        for r in range(args.rounds):
            for c, n in zip(args.concurrency, counts):
                rate, late, bad = ours_concurrent(url, c, n)
                ours[c].append(rate)
                busy[c].append(late)
                failed += bad
            for c, fig in guidellm_round(exe, url, args.concurrency, counts, Path(tmp)).items():
                theirs[c].append(fig)
                failed += int(fig["failed"])
            print(f"round {r + 1}: ours " + ", ".join(f"{c}: {ours[c][-1]:.0f}/s" for c in args.concurrency)
                  + "; guidellm " + ", ".join(f"{c}: {theirs[c][-1]['rate']:.0f}/s" for c in args.concurrency), flush=True)
        scheduled = {c: ours_scheduled(url, c, args.itl_ms, args.stream_tokens) for c in args.concurrency}
    print(f"\nrequest rate: median over {args.rounds} rounds, completions/s after the first 10%; "
          f"requests per concurrency {', '.join(map(str, counts))}")
    stream_s = args.itl_ms * args.stream_tokens / 1000
    print(f"scheduling delay: rate profile C/{stream_s:g}s, at most C in flight, streams of {args.stream_tokens} chunks "
          f"{args.itl_ms:g} ms apart; p99 of (headers on the socket - due)")
    print(f"{'conc':>5}  {'ours req/s':>10}  {'guidellm req/s':>14}  {'ratio':>6}  {'sched p99 ms':>12}  "
          f"{'loop lag p99 ms':>15}  {'in flight':>9}  {'guidellm own req/s':>18}  {'saturated lateness p99 ms':>25}")
    for c in args.concurrency:
        mine = statistics.median(ours[c])
        other = statistics.median(f["rate"] for f in theirs[c])
        own = statistics.median(f["own"] for f in theirs[c])
        s = scheduled[c]
        flag = "  CLIENT-BOUND" if s["client_bound"] else ""
        print(f"{c:>5}  {mine:>10.0f}  {other:>14.0f}  {mine / other:>6.2f}  {s['lateness_p99_ms']:>12.2f}  "
              f"{s['loop_lag_p99_ms']:>15.2f}  {s['in_flight']:>9.0f}  {own:>18.0f}  {max(busy[c]) * 1000:>25.2f}{flag}")
        failed += int(s["failed"])
    print(f"failed requests (either generator): {failed}")


if __name__ == "__main__":
    main()
