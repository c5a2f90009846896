"""What `gatekeeper shadow` costs a client: latency through the proxy vs direct to the primary,
at 1, 16 and 64 concurrent clients, measured in the same run.

    python benchmarks/shadow_overhead.py [--rounds 4] [--sample 0.05] [--concurrency 1 16 64]

The primary, the shadow and the reference replica are benchmarks/fast_server.py processes
(16 one-token SSE chunks, 1 ms apart: a ~16 ms streamed chat answer), so the proxy's own cost is
not buried in an engine's noise. `gatekeeper shadow` mirrors `--sample` of the requests to the
shadow and the replica and stores the pairs (its mirror process runs on the same two cores).
Clients are asyncio + aiohttp tasks, each sending streamed chat requests back to back and timing
each until the last byte. Per concurrency, rounds alternate direct and proxied blocks (A B, B A,
...) so that drift on a shared machine hits both; the figures pool the rounds.

Two shadows, one after the other: a healthy one, and a hung one (it accepts and never finishes:
the mirror's workers block, the queue fills and copies are dropped). Printed per concurrency:
p50 and p99 end-to-end latency direct and proxied, the overhead
(proxied − direct) in ms and the ratio; then the mirror's counters (sampled, dropped, stored).
Target (issue 15): p50 overhead ≤ 1 ms and p99 overhead ≤ 5 ms on loopback.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import httpx

HERE = Path(__file__).resolve().parent
BODY = {"model": "m", "messages": [{"role": "user", "content": "Say something about the weather today."}],
        "max_tokens": 16, "stream": True, "temperature": 0}


def _start(cmd: list[str], pattern: str) -> tuple[subprocess.Popen, str]:
    """Start a process; its ready line (the first matching `pattern`)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stdout.readline() if proc.stdout else ""
        if re.search(pattern, line):
            return proc, line
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise SystemExit(f"did not start: {' '.join(cmd)}")


def _url(line: str, what: str = "listening on") -> str:
    m = re.search(what + r" (http://[\d.:]+)", line)
    assert m, line
    return m.group(1)


def _fast_server(delay_ms: float = 1) -> tuple[subprocess.Popen, str]:
    proc, line = _start([sys.executable, str(HERE / "fast_server.py"), "--port", "0", "--chunks", "16", "--delay-ms",
                         str(delay_ms)], "listening on")
    return proc, _url(line)


async def _block(session: aiohttp.ClientSession, url: str, clients: int, n: int) -> list[float]:
    """`n` requests from `clients` concurrent clients; each request's seconds to its last byte."""
    out: list[float] = []
    left = n

    async def client() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            t0 = time.perf_counter()
            async with session.post(url + "/v1/chat/completions", json=BODY) as r:
                async for _ in r.content.iter_any():
                    pass
                assert r.status == 200, r.status
            out.append(time.perf_counter() - t0)

    await asyncio.gather(*(client() for _ in range(clients)))
    return out


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _measure(direct: str, proxied: str, levels: list[int], rounds: int, per_block: int) -> list[dict]:
    rows = []
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        await _block(session, direct, 4, 40)  # warm both paths (connections, caches)
        await _block(session, proxied, 4, 40)
        for c in levels:
            n = max(per_block, 4 * c)
            times: dict[str, list[float]] = {"direct": [], "proxied": []}
            for r in range(rounds):
                order = ("direct", "proxied") if r % 2 == 0 else ("proxied", "direct")
                for side in order:
                    times[side] += await _block(session, direct if side == "direct" else proxied, c, n)
            row = {"clients": c, "requests_per_side": len(times["direct"])}
            for q, name in ((0.5, "p50"), (0.99, "p99")):
                d, p = _pct(times["direct"], q), _pct(times["proxied"], q)
                row[name] = {"direct_ms": round(d * 1e3, 2), "proxied_ms": round(p * 1e3, 2),
                             "overhead_ms": round((p - d) * 1e3, 2), "ratio": round(p / d, 3)}
            row["mean_overhead_ms"] = round((statistics.mean(times["proxied"]) - statistics.mean(times["direct"])) * 1e3, 2)
            rows.append(row)
            print(f"c={c:>3}: p50 {row['p50']['direct_ms']:7.2f} → {row['p50']['proxied_ms']:7.2f} ms "
                  f"(+{row['p50']['overhead_ms']:.2f} ms, ×{row['p50']['ratio']}); p99 {row['p99']['direct_ms']:7.2f} → "
                  f"{row['p99']['proxied_ms']:7.2f} ms (+{row['p99']['overhead_ms']:.2f} ms, ×{row['p99']['ratio']}); "
                  f"{row['requests_per_side']} requests per side", flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--sample", type=float, default=0.05)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64])
    ap.add_argument("--per-block", type=int, default=100, help="requests per block (at least 4 per client)")
    ap.add_argument("--modes", nargs="+", choices=["healthy", "hung"], default=["healthy", "hung"],
                    help="the shadow answers (healthy) or never finishes (hung: the queue fills, copies drop)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    procs = []
    tmp = tempfile.mkdtemp(prefix="gk-shadow-bench-")
    out = {}
    try:
        (p1, primary), (p2, healthy), (p3, replica) = _fast_server(), _fast_server(), _fast_server()
        p4, hung = _fast_server(delay_ms=600_000)  # accepts and never finishes: a hung shadow
        procs += [p1, p2, p3, p4]
        ok = True
        for mode in args.modes:
            shadow = healthy if mode == "healthy" else hung
            sh, line = _start([sys.executable, "-m", "gatekeeper.cli", "shadow", "--primary", primary, "--shadow", shadow,
                               "--reference-replica", replica, "--sample", str(args.sample), "--store",
                               os.path.join(tmp, f"{mode}.db"), "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0",
                               "--workers", "8", "--timeout", "600"], "listening on")
            procs.append(sh)
            url, admin = _url(line), _url(line, "admin")
            print(f"{mode} shadow: primary {primary}, proxy {url}, sample {args.sample:.0%}, {args.rounds} rounds", flush=True)
            rows = asyncio.run(_measure(primary, url, args.concurrency, args.rounds, args.per_block))
            mirror = httpx.get(admin + "/verdict", timeout=60).json().get("mirror", {})
            print(f"  mirror: {json.dumps(mirror)}", flush=True)
            ok = ok and all(r["p50"]["overhead_ms"] <= 1.0 and r["p99"]["overhead_ms"] <= 5.0 for r in rows)
            out[mode] = {"levels": rows, "mirror": mirror}
            sh.send_signal(signal.SIGTERM)
            sh.wait(timeout=30)
        print(f"target (p50 ≤ 1 ms, p99 ≤ 5 ms overhead at every level): {'met' if ok else 'missed'}")
        if args.json:
            print(json.dumps({**out, "sample": args.sample}, indent=2))
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()


if __name__ == "__main__":
    main()
