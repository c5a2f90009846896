"""What a live look costs as a PostgreSQL pair store grows (issue 44), for
benchmarks/shadow_replicas.py: a store of n synthetic pairs (tests/helpers/store_pairs.py, a clean
candidate), a replica's first look, one look after more pairs, the stateless `shadow verdict` path
and a full recompute, their times and whether their JSON is one."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from gatekeeper.live.judgement import LiveJudgement
from gatekeeper.live.verdict import judge_store
from gatekeeper.run.plan import load_gate_policy
from gatekeeper.traffic.store import Batching, PairStore, open_store
from pg_server import PgServer
from store_pairs import pair

ROOT = Path(__file__).resolve().parents[1]
POLICY = "gates/default.yaml"  # the replicas' --policy default; every judgement here uses it
T = TypeVar("T")


def timed(f: Callable[[], T]) -> tuple[T, float]:
    """f's result and the seconds it took."""
    t0 = time.perf_counter()
    out = f()
    return out, time.perf_counter() - t0


def same_json(*verdicts: dict[str, Any]) -> bool:
    """Whether the verdicts are one JSON (key order aside)."""
    return len({json.dumps(v, sort_keys=True) for v in verdicts}) == 1


def filled(url: str, n: int, seed: int) -> PairStore:
    """A store holding synthetic pairs 0..n-1 of stream `seed` (clean: the candidate as noisy as the twin)."""
    store = open_store(url, replica="synthetic", batching=Batching(1000, 3600.0, 1000))
    for i in range(n):
        store.add(*pair(seed, i, bad=0.01))
    store.flush()
    return store


def looks_row(server: PgServer, n: int, new: int, seed: int) -> dict[str, Any]:
    """One store of `n` pairs: the first look, a look after `new` more, the stateless path, a full recompute."""
    s = load_gate_policy(str(ROOT / POLICY)).settings("shadow")
    name = f"looks_{n}"
    url = server.create_database(name)
    store, build = timed(lambda: filled(url, n, seed))
    try:
        live = LiveJudgement(store, s)
        _, first = timed(live.judge)
        for i in range(n, n + new):
            store.add(*pair(seed, i, bad=0.01))
        store.flush()
        data, look = timed(live.judge)
        with open_store(url, readonly=True) as ro:
            stateless_data, stateless = timed(LiveJudgement(ro, s).judge)
        full_data, full = timed(lambda: judge_store(store, s, sticky=True))
    finally:
        store.close()
    with server.admin() as db:
        db.execute(f'DROP DATABASE "{name}"')  # the next size's room on disk
    return {"pairs": n, "build_s": build, "first_s": first, "look_s": look, "stateless_s": stateless, "full_s": full,
            "verdict": data["verdict"], "same": same_json(data, stateless_data, full_data)}


def print_looks_head(new: int) -> None:
    print(f"{'pairs':>8} {'build':>8} {'first look':>10} {f'+{new} look':>11} {'stateless':>10} {'recompute':>10}"
          f" {'recompute/look':>14}  verdict   look = stateless = recompute", flush=True)


def print_look(x: dict[str, Any]) -> None:
    print(f"{x['pairs']:>8} {x['build_s']:7.1f}s {x['first_s']:9.2f}s {x['look_s']:10.3f}s {x['stateless_s']:9.2f}s"
          f" {x['full_s']:9.2f}s {x['full_s'] / x['look_s']:13.0f}x  {x['verdict']:8}  {'yes' if x['same'] else 'NO'}", flush=True)
