"""Shared transient 503s through real servers: does a clean candidate stay clean, and is a
sporadically corrupting one still caught?

    python benchmarks/shadow_real_503.py [--runs 10] [--rate 0.02] [--gates startup,shadow]
    python benchmarks/shadow_real_503.py --runs 5 --candidate-fault sporadic-corruption=0.03

Each run is a real `gatekeeper run` whose reference and candidate are launch targets: this file's
`serve` command starts a bundled server (the reference path, or the optimized path as the
candidate) on a private port and puts a real fault proxy (tests/helpers/fault_proxy.py, mode
`unavailable_random`) on the port gatekeeper gave it. The proxy answers a seeded `--rate` of all
requests, GET or POST, with a 503 without `Retry-After`, as a server behind an overloaded balancer
does now and then. Gate 5's twin goes to a second launch of the reference (`twin: replica`), so
all three servers sit behind proxies of their own. Each proxy writes one line per 503 it
answered; the run prints those counts by role with the verdict, the reasons and the time.

On a fault-free candidate any ROLLBACK is a false one; a HOLD whose reasons are request errors
means a transient failure reached a verdict. With `--candidate-fault`, the candidate's server gets
that fault switch and every run should ROLLBACK. The default gates are the five correctness gates:
the performance gate's load generator does not retry by design, so there a 503 is a measured error.

Measured on the 2-core VM (shared with other work), gates 1-5, seeds 0-9 / 0-19:
- before the client retried (only gate 1's probe and canary did): 2 of 2 clean runs HOLD: golden
  cases ERROR on single 503s, and one 503 to /tokenize switched gate 4 to estimated token counts,
  whose prompts then overran max_model_len (400s, gate 4 ERROR);
- with the client's bounded retry: clean candidate 10/10 PROMOTE, 0 false ROLLBACK, 0 ERROR checks,
  563 503s answered (44-67 a run), 402-580 s a run; every gate 5 pair judged (420 of 420);
- `--candidate-fault sporadic-corruption=0.03`: 20/20 ROLLBACK (shadow.rule.answers_differ),
  928 503s answered, 119-180 s a run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
GK_TINY = ROOT / "gatekeeper" / "models" / "gk-tiny"
CORRECTNESS_GATES = "startup,numerics,golden,longctx,shadow"


class _Lines(list):
    """A list that also appends each item, as one line, to a file (the proxy is SIGTERMed with its server)."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path

    def append(self, item) -> None:  # type: ignore[override]
        super().append(item)
        with open(self.path, "a") as f:
            f.write(" ".join(map(str, item)) + "\n")


def serve(port: int, rate: float, seed: str, log: Path, serve_args: list[str]) -> None:
    """A bundled server on a private port behind a 503-injecting proxy on `port`, until SIGTERM."""
    sys.path.insert(0, str(ROOT / "tests" / "helpers"))
    from fault_proxy import fault_proxy
    from server_util import free_port, stop

    inner = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "gatekeeper.cli", "serve", "--port", str(inner), *serve_args])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                if httpx.get(f"http://127.0.0.1:{inner}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        else:
            sys.exit(proc.returncode or 1)
        with fault_proxy(f"http://127.0.0.1:{inner}", "unavailable_random", rate=rate, seed=seed, port=port,
                         injected=_Lines(log / f"{port}.503")):
            proc.wait()
    finally:
        stop(proc)


def _config(path: Path, rate: float, seed: int, log: Path, candidate_fault: str | None) -> None:
    """A run config whose two targets are this file's `serve` command."""
    def command(role: str, *serve_args: str) -> str:
        return (f"{sys.executable} {Path(__file__).resolve()} serve --port {{port}} --rate {rate} --seed {seed}:{role} "
                f"--log {log} -- --model {GK_TINY} --served-model-name gk-tiny {' '.join(serve_args)}")
    fault = ("--fault", candidate_fault) if candidate_fault else ()
    path.write_text(json.dumps({
        "reference": {"kind": "launch", "model": "gk-tiny", "command": command("reference", "--profile", "reference")},
        "candidate": {"kind": "launch", "model": "gk-tiny", "command": command("candidate", "--profile", "optimized", *fault)},
    }))


def one_run(work: Path, seed: int, rate: float, gates: str, candidate_fault: str | None, policy: str | None) -> dict:
    """One `gatekeeper run`; its verdict, reasons, the 503s each proxy answered, and time."""
    log = work / f"503-{seed}"
    log.mkdir()
    config = work / f"run-{seed}.json"
    _config(config, rate, seed, log, candidate_fault)
    argv = [sys.executable, "-m", "gatekeeper.cli", "run", "-c", str(config), "--seed", str(seed), "--gates", gates,
            "--out", str(work / "reports"), "--json"] + (["--policy", policy] if policy else [])
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    try:
        summary = json.loads(proc.stdout)
    except ValueError:
        summary = {}
    if "verdict" not in summary:  # no verdict: a usage error, a crash (gatekeeper.error/1) or a signal
        summary = {"verdict": f"exit {proc.returncode}", "reasons": [summary.get("error") or proc.stderr.strip()[-300:]]}
    ports = {t["role"]: t["base_url"].rsplit(":", 1)[1] for t in summary.get("targets", [])}
    injected: Counter[str] = Counter()
    for f in log.glob("*.503"):
        role = next((r for r, p in ports.items() if f.stem == p), "replica")
        injected[role] += len(f.read_text().splitlines())
    errors = [f"{c['id']}: {c['reason'][:120]}" for g in summary.get("gates", []) for c in g["checks"]
              if c["status"] == "ERROR"]
    return {"seed": seed, "verdict": summary.get("verdict"), "reasons": summary.get("reasons", []), "errors": errors,
            "injected": dict(injected), "seconds": round(elapsed)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command")
    sv = sub.add_parser("serve", help="(internal) a bundled server behind a 503 proxy; the launch command")
    sv.add_argument("--port", type=int, required=True)
    sv.add_argument("--rate", type=float, required=True)
    sv.add_argument("--seed", required=True)
    sv.add_argument("--log", type=Path, required=True)
    sv.add_argument("serve_args", nargs=argparse.REMAINDER)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0, help="the first run's seed; run i uses seed+i")
    ap.add_argument("--rate", type=float, default=0.02, help="share of requests each proxy answers 503")
    ap.add_argument("--gates", default=CORRECTNESS_GATES,
                    help="the performance gate's load generator does not retry by design: a 503 there is a measured error")
    ap.add_argument("--candidate-fault", default=None, help="a fault switch for the candidate's server")
    ap.add_argument("--policy", default=None)
    ap.add_argument("--keep", action="store_true", help="keep the run directories")
    args = ap.parse_args()
    if args.command == "serve":
        serve(args.port, args.rate, args.seed, args.log, [a for a in args.serve_args if a != "--"])
        return
    print(f"{args.runs} runs, gates {args.gates}, a {args.rate:.0%} 503 proxy in front of reference, replica and "
          f"candidate; candidate fault: {args.candidate_fault or 'none'}", flush=True)
    work = Path(tempfile.mkdtemp(prefix="gk-503-"))
    outcomes = []
    for i in range(args.runs):
        o = one_run(work, args.seed + i, args.rate, args.gates, args.candidate_fault, args.policy)
        outcomes.append(o)
        print(f"seed {o['seed']:3d}  {o['verdict']:8}  503s {o['injected']}  {o['seconds']} s  "
              f"reasons: {'; '.join(o['reasons'])[:400]}", flush=True)
        for e in o["errors"]:
            print(f"          ERROR {e}", flush=True)
    verdicts = Counter(o["verdict"] for o in outcomes)
    print(f"verdicts: {dict(verdicts)}; 503s answered: {sum(sum(o['injected'].values()) for o in outcomes)}; "
          f"mean {sum(o['seconds'] for o in outcomes) / len(outcomes):.0f} s per run")
    if args.candidate_fault:
        print(f"caught (ROLLBACK): {verdicts['ROLLBACK']}/{len(outcomes)}")
    else:
        print(f"false ROLLBACK: {verdicts['ROLLBACK']}/{len(outcomes)}")
    if args.keep:
        print(f"run directories under {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
