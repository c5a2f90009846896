"""Gate 5 live at production scale (issue 44): 1, 2 and 4 `gatekeeper shadow` replicas on one
PostgreSQL pair store, and what a live look costs as the store grows, measured in the same run.

    python benchmarks/shadow_replicas.py [--replicas 1 2 4] [--clients 64] [--requests 20000]
        [--sample 1.0] [--look-sizes 10000 100000 1000000] [--look-new 1000] [--quick]

Everything runs on loopback: a throwaway PostgreSQL 15 (tests/helpers/pg_server.py, initdb and
pg_ctl in a temporary directory) and two benchmarks/fast_server.py processes answering streamed,
OpenAI-shaped chat completions at once (16 one-token chunks, no delay) — one is the primary, the
other the shadow and the reference replica — so what is measured is the proxy's own cost, not an
engine's.

Replicas. For each R in --replicas, on a fresh database: R real `gatekeeper shadow` processes
(`--store URL --replica rI`), then --requests requests from --clients concurrent clients (asyncio
+ aiohttp), request k sent to replica k mod R (round robin, as a load balancer would), and the
same requests sent straight to the primary, in alternating blocks (direct, proxied; proxied,
direct; ...) so that drift on a shared machine hits both. Printed per R:
- requests/s through the replicas and straight to the primary, and their ratio;
- the proxy's overhead: end-to-end p50 and p99 proxied minus direct, pooled over the blocks;
- pairs: proxied requests sent, copies the replicas sampled, dropped for a full queue (counted)
  and stored; lost = sampled − dropped − stored, counted once the store stopped growing and the
  replicas were stopped cleanly (SIGTERM): 0 expected; `drain` is how long the mirrors took,
  after the last answer, to store their backlog;
- the shared verdict (`gatekeeper shadow verdict --store URL --json`) against the SQLite
  judgement of the same pairs (`gatekeeper pairs export`, `pairs import` into a SQLite file,
  `shadow verdict` over it): the same JSON expected, and each command's seconds.
Nothing reads `/verdict` during the load: a replica's look writes the store's slice order (the
first look's slices become the declared ones, docs/shadow-live.md), which a fresh SQLite store
would not share; the stateless `shadow verdict` writes nothing.

Looks. For each size in --look-sizes, a PostgreSQL store of that many synthetic pairs
(tests/helpers/store_pairs.py, a clean candidate): a replica's first look (every pair measured,
the measures cached), one incremental look after --look-new more pairs, the stateless
`shadow verdict` path over the same store (read-only: every cached measure read), and a full
recompute (`judge_store`, as `?recompute=1`: every pair measured afresh); the three JSON equal.
A first look and a recompute measure every pair, so their time grows with the store (expect
minutes each at 10⁶); each size's database is dropped after its row.

Targets (issue 44): 4 replicas, 64 clients, 20,000 requests: 0 lost, the verdicts equal, overhead
p50 ≤ 1 ms and p99 ≤ 5 ms; a look at 10⁶ stored pairs ≤ 1 s, equal to a full recompute.
`--quick` (about a minute): 16 clients, 400 requests, looks at 10⁴ pairs only.

`--upstream bundled`: the same with two bundled engines serving the shipped gk-tiny as the primary
and the shadow, for an end-to-end figure (the engines take the cores: what the proxy costs a
real, slower upstream); `--profile DIR`: py-spy samples the replicas during the load
(benchmarks/spy.py) and the figures say where their CPU time went.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from gatekeeper.stats.quantiles import percentile
from gatekeeper.traffic.store import PairStore, open_store

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "helpers"))

from pg_server import PgServer, find_binaries, start  # noqa: E402
from paths import GK_TINY  # noqa: E402
from server_util import free_port  # noqa: E402

sys.path.insert(0, str(ROOT / "benchmarks"))
from shadow_looks import looks_row, print_look, print_looks_head, same_json  # noqa: E402
from spy import Spy, summary  # noqa: E402

CHAT = "/v1/chat/completions"


@dataclass
class Proc:
    """A started process and the file its stdout and stderr go to (a pipe nobody reads could fill)."""

    cmd: list[str]
    popen: subprocess.Popen
    log: Path

    def wait_for(self, pattern: str, deadline_s: float = 120) -> re.Match:
        """The first match of `pattern` in the log (the ready line); exits the benchmark if the
        process ends or the deadline passes first."""
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline:
            found = re.search(pattern, self.log.read_text(errors="replace"))
            if found:
                return found
            if self.popen.poll() is not None:
                break
            time.sleep(0.05)
        raise SystemExit(f"{' '.join(self.cmd)} did not start:\n{self.log.read_text(errors='replace')[-2000:]}")

    def stop(self) -> str:
        """SIGTERM, wait (killed after 120 s); the whole log."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
        try:
            self.popen.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()
        return self.log.read_text(errors="replace")


def launch(cmd: list[str], log: Path) -> Proc:
    """Start `cmd` in the checkout, its output to `log`."""
    with open(log, "w") as out:
        popen = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                 env={**os.environ, "PYTHONUNBUFFERED": "1"})
    return Proc(cmd, popen, log)


def gk(*args: str) -> tuple[subprocess.CompletedProcess, float]:
    """`gatekeeper ARGS...` run to its end; the result and its seconds. A verdict's exit (0, 1, 2) is
    a result; anything else ends the benchmark."""
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "gatekeeper.cli", *args], cwd=ROOT, capture_output=True, text=True,
                         timeout=7200)
    if res.returncode not in (0, 1, 2):
        raise SystemExit(f"gatekeeper {' '.join(args)}: exit {res.returncode}\n{res.stderr[-2000:]}")
    return res, time.perf_counter() - t0


# --- replicas -----------------------------------------------------------------------------------

MODEL = "m"  # the model the requests name: the bundled engine's when it is the upstream (--upstream bundled)


def request_body(i: int) -> bytes:
    """Request i, encoded once: the same bytes go direct and through a replica."""
    return json.dumps({"model": MODEL, "messages": [{"role": "user", "content": f"Question {i}: what is the weather?"}],
                       "max_tokens": 16, "stream": True, "temperature": 0}).encode()


async def block(session: aiohttp.ClientSession, urls: list[str], clients: int, bodies: list[bytes]) -> tuple[list[float], float]:
    """`bodies` sent by `clients` concurrent clients, body k to urls[k mod len(urls)]; each request's
    seconds to its last byte, and the block's wall time."""
    out: list[float] = []
    todo = iter(enumerate(bodies))  # shared by the clients: each takes the next request when free

    async def client() -> None:
        for k, body in todo:
            t0 = time.perf_counter()
            async with session.post(urls[k % len(urls)] + CHAT, data=body, headers={"content-type": "application/json"}) as r:
                async for _ in r.content.iter_any():
                    pass
                if r.status != 200:
                    raise SystemExit(f"{urls[k % len(urls)]}: HTTP {r.status}")
            out.append(time.perf_counter() - t0)

    t0 = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    return out, time.perf_counter() - t0


@dataclass
class Load:
    """What the clients measured: latencies and wall time per side, and the proxied requests sent."""

    latency: dict[str, list[float]]
    wall: dict[str, float]
    sent: int


async def load(direct: str, proxies: list[str], clients: int, n: int, blocks: int) -> Load:
    """`n` requests direct and the same `n` through the replicas, in alternating blocks; first a
    few of each to open connections (those through the replicas become pairs too: counted)."""
    bodies = [request_body(i) for i in range(n)]
    warm = [request_body(n + i) for i in range(8 * len(proxies))]
    per = -(-n // blocks)
    latency: dict[str, list[float]] = {"direct": [], "proxied": []}
    wall = {"direct": 0.0, "proxied": 0.0}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        await block(session, [direct], 4, warm)
        await block(session, proxies, 4, warm)
        for b in range(blocks):
            chunk = bodies[b * per:(b + 1) * per]
            for side in ("direct", "proxied") if b % 2 == 0 else ("proxied", "direct"):
                times, seconds = await block(session, [direct] if side == "direct" else proxies, clients, chunk)
                latency[side] += times
                wall[side] += seconds
    return Load(latency, wall, n + len(warm))


def settle(store: PairStore, expected: int | None, quiet_s: float, deadline_s: float = 1800) -> tuple[int, float]:
    """Wait until the store holds `expected` pairs, or (none expected, or it never gets there) has
    not grown for `quiet_s`; the pairs it holds and the seconds waited."""
    t0 = last_change = time.monotonic()
    count = len(store)
    while time.monotonic() - t0 < deadline_s and count != expected and time.monotonic() - last_change < quiet_s:
        time.sleep(0.25)
        now = len(store)
        if now != count:
            count, last_change = now, time.monotonic()
    return count, time.monotonic() - t0


STOP_LINE = re.compile(r"shadow: (\d+) forwarded, (\d+) sampled, (\d+) dropped")


def replicas_row(server: PgServer, work: Path, up: dict[str, str], r: int, args: argparse.Namespace) -> dict[str, Any]:
    """R replicas on a fresh database: the load, the pairs, the verdicts."""
    url = server.create_database(f"replicas_{r}")
    procs = [launch([sys.executable, "-m", "gatekeeper.cli", "shadow", "--primary", up["primary"], "--shadow", up["mirror"],
                     "--reference-replica", up["mirror"], "--sample", str(args.sample), "--store", url, "--replica", f"r{i}",
                     "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0", "--queue", str(args.queue), "--workers",
                     str(args.workers), "--flush-pairs", str(args.flush_pairs)], work / f"replica-{r}-{i}.log")
             for i in range(r)]
    try:
        proxies = [p.wait_for(r"listening on (http://[\d.:]+)").group(1) for p in procs]
        spies = [Spy.attach(p.popen.pid, args.profile / f"replicas-{r}-r{i}.raw") for i, p in enumerate(procs)] \
            if args.profile else []
        done = asyncio.run(load(up["primary"], proxies, args.clients, args.requests, args.blocks))
        for spy in spies:
            if spy is not None:
                spy.stop()
        with open_store(url, readonly=True) as store:
            _, drain = settle(store, done.sent if args.sample >= 1 else None, quiet_s=5.0)
            counts = [0, 0, 0]
            for p in procs:
                found = STOP_LINE.search(p.stop())
                if found is None:
                    raise SystemExit(f"a replica did not say what it forwarded:\n{p.log.read_text(errors='replace')[-2000:]}")
                counts = [c + int(g) for c, g in zip(counts, found.groups())]
            stored = len(store)
    finally:
        for p in procs:
            p.stop()
    shared, pg_s = gk("shadow", "verdict", "--store", url, "--json")
    exported, sqlite_db = work / f"replicas-{r}.jsonl", work / f"replicas-{r}.db"
    gk("pairs", "export", url, "--out", str(exported))
    gk("pairs", "import", str(exported), "--store", str(sqlite_db))
    local, sqlite_s = gk("shadow", "verdict", "--store", str(sqlite_db), "--json")
    verdict = json.loads(shared.stdout)
    _, sampled, dropped = counts
    lat = done.latency
    return {"replicas": r, "rps": len(lat["proxied"]) / done.wall["proxied"], "direct_rps": len(lat["direct"]) / done.wall["direct"],
            **{f"{name}_{side}_ms": percentile(xs, q) * 1e3 for name, q in (("p50", 50), ("p99", 99)) for side, xs in lat.items()},
            "sent": done.sent, "sampled": sampled, "dropped": dropped, "stored": stored,
            "lost": sampled - dropped - stored, "drain_s": drain, "verdict": verdict["verdict"],
            "same": same_json(verdict, json.loads(local.stdout)), "verdict_pg_s": pg_s, "verdict_sqlite_s": sqlite_s}


def print_replicas_head() -> None:
    print(f"{'R':>2} {'req/s':>7} {'direct':>7} {'ratio':>6} {'p50 direct→proxied':>23} {'p99 direct→proxied':>23}"
          f" {'sent':>6} {'sampled':>7} {'dropped':>7} {'stored':>6} {'lost':>4} {'drain':>6}  verdict   = SQLite"
          f"  {'verdict s pg/sqlite':>19}", flush=True)


def print_replicas_row(x: dict[str, Any]) -> None:
    lat = "".join(f" {x[f'{q}_direct_ms']:6.2f}→{x[f'{q}_proxied_ms']:6.2f} ({x[f'{q}_proxied_ms'] - x[f'{q}_direct_ms']:+6.2f})"
                  for q in ("p50", "p99"))
    print(f"{x['replicas']:>2} {x['rps']:7.0f} {x['direct_rps']:7.0f} {x['rps'] / x['direct_rps']:6.2f}{lat}"
          f" {x['sent']:6} {x['sampled']:7} {x['dropped']:7} {x['stored']:6} {x['lost']:4} {x['drain_s']:5.1f}s"
          f"  {x['verdict']:8}  {'yes' if x['same'] else 'NO':6}  {x['verdict_pg_s']:8.1f}/{x['verdict_sqlite_s']:.1f}",
          flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--replicas", type=int, nargs="*", default=[1, 2, 4], help="replica counts to load (none: looks only)")
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--requests", type=int, default=20_000, help="proxied requests per replica count (and as many direct)")
    ap.add_argument("--blocks", type=int, default=10, help="alternating direct/proxied blocks the requests are split into")
    ap.add_argument("--sample", type=float, default=1.0, help="the replicas' --sample (1: every request becomes a pair)")
    ap.add_argument("--queue", type=int, default=20_000, help="the replicas' --queue (large: a backlog waits, nothing dropped)")
    ap.add_argument("--workers", type=int, default=8, help="the replicas' --workers")
    ap.add_argument("--flush-pairs", type=int, default=32, help="the replicas' --flush-pairs")
    ap.add_argument("--look-sizes", type=int, nargs="*", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--look-new", type=int, default=1000, help="pairs added before the incremental look")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="16 clients, 400 requests, 4 blocks, looks at 10⁴ pairs only")
    ap.add_argument("--json", action="store_true", help="also print every figure as JSON")
    ap.add_argument("--upstream", choices=("fast", "bundled"), default="fast",
                    help="fast: benchmarks/fast_server.py (the proxy's own cost); bundled: two bundled engines serving "
                         "the shipped gk-tiny (end to end; use fewer clients and requests, e.g. 8 and 400)")
    ap.add_argument("--profile", type=Path, metavar="DIR", help="sample the replicas with py-spy during the load "
                    "(raw stacks into DIR) and print where their CPU time went")
    args = ap.parse_args()
    global MODEL
    MODEL = "gk-tiny" if args.upstream == "bundled" else MODEL
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    if args.quick:
        args.clients, args.requests, args.blocks, args.look_sizes = 16, 400, 4, [10_000]
    bin_dir = find_binaries()
    if bin_dir is None:
        raise SystemExit("no PostgreSQL server binaries (initdb, pg_ctl): install the postgresql package")
    with ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="gk-shadow-replicas-")))
        server = start(bin_dir)
        stack.callback(server.stop)
        up: dict[str, str] = {}
        for role in ("primary", "mirror"):
            if args.upstream == "bundled":  # end to end: the shipped model on the bundled engine
                p = launch([sys.executable, "-m", "gatekeeper.cli", "serve", "--model", str(GK_TINY), "--port",
                            str(free_port())], work / f"{role}.log")
                stack.callback(p.stop)
                up[role] = p.wait_for(r"serving \S+ on (http://[\d.:]+)").group(1)
                continue
            p = launch([sys.executable, str(ROOT / "benchmarks" / "fast_server.py"), "--port", "0", "--chunks", "16"],
                       work / f"{role}.log")
            stack.callback(p.stop)
            up[role] = p.wait_for(r"listening on (http://[\d.:]+)").group(1)
        print(f"PostgreSQL {bin_dir.parent.name} on port {server.port}; {args.upstream} upstream {up['primary']} (primary), "
              f"{up['mirror']} (shadow and reference replica); {args.clients} clients, {args.requests} requests per side "
              f"in {args.blocks} blocks, sample {args.sample:g}, queue {args.queue}, workers {args.workers}, "
              f"flush {args.flush_pairs}", flush=True)
        rows = []
        if args.replicas:
            print_replicas_head()
        for r in args.replicas:
            rows.append(replicas_row(server, work, up, r, args))
            print_replicas_row(rows[-1])
            if args.profile:
                print(summary(sorted(args.profile.glob(f"replicas-{r}-r*.raw"))), flush=True)
        looks = []
        if args.look_sizes:
            print_looks_head(args.look_new)
            for n in args.look_sizes:
                looks.append(looks_row(server, n, args.look_new, args.seed))
                print_look(looks[-1])
    most = [x for x in rows if x["replicas"] == max(args.replicas)] if rows else []
    met = bool(most) and all(x["lost"] == 0 and x["same"] and x["p50_proxied_ms"] - x["p50_direct_ms"] <= 1.0
              and x["p99_proxied_ms"] - x["p99_direct_ms"] <= 5.0 for x in most)
    if most:
        print(f"target at {max(args.replicas)} replicas, {args.clients} clients, {args.requests} requests (issue 44: 4, 64, "
              f"20000; 0 lost, verdict = SQLite, overhead p50 ≤ 1 ms, p99 ≤ 5 ms): {'met' if met else 'missed'}")
    big = [x for x in looks if x["pairs"] == max(args.look_sizes)] if looks else []
    if big:
        print(f"target at {big[0]['pairs']} pairs (issue 44: 10⁶; a look ≤ 1 s, equal to a recompute): "
              f"{'met' if big[0]['look_s'] <= 1.0 and big[0]['same'] else 'missed'}")
    if args.json:
        print(json.dumps({"replicas": rows, "looks": looks, "args": vars(args)}, indent=2, default=str))


if __name__ == "__main__":
    main()
