"""Gate 5's live verdict at scale, without an engine: for pair stores of 1,000 / 10,000 / 100,000
synthetic pairs, the cost of a `/verdict` judged from scratch (what every look cost before the
verdict was kept up to date) against the live judgement's looks, measured in the same run.

    python benchmarks/shadow_scale.py [--sizes 1000 10000 100000] [--new 100]

Per size, on one store (written by an import, as `gatekeeper pairs import` does):
- `first`: the live judgement's first look (`live/judgement.py`): it measures every pair and
  keeps the measures in the store's cache;
- `+N look`: N more pairs committed one by one (as the mirror does), then a look: it measures
  those N and adds them to the carried analysis; `of which results` is `Analysis.results` (the
  non-critical tests over every slice), the part that does not shrink with N;
- `restart`: a new live judgement on the same store (a restarted proxy): the measures come from
  the cache, the analysis is replayed;
- `scratch`: `judge_store` over the same N + size pairs: the whole store read, measured and
  judged again, as every look did before; the ratio is scratch / the +N look, and `same JSON`
  says the two verdicts are identical.

Synthetic mix: five tenants, chat / JSON / tool requests, answers that mostly agree, 2% differing
in the twin (noise) and 3% in the candidate. Wall-clock times on a shared machine are noisy;
compare the ratios, measured in the same run.
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gatekeeper.traffic.answers import Answer  # noqa: E402
from gatekeeper.traffic.settings import ShadowSettings  # noqa: E402
from gatekeeper.traffic.store import PairStore, SqliteStore  # noqa: E402
from gatekeeper.live.judgement import LiveJudgement  # noqa: E402
from gatekeeper.live.verdict import judge_store  # noqa: E402
from gatekeeper.traffic.format import TrafficRecord, parse_record  # noqa: E402

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
T = TypeVar("T")
WORDS = "the a model answer city weather report table value json tool call said".split()


def synthetic(rng: random.Random, i: int) -> tuple[TrafficRecord, Answer, Answer, Answer]:
    """One synthetic stored pair: (record, reference, candidate, twin)."""
    tenant = rng.choice(("internal", "support", "agents", "data", "assistant"))
    kind = {"agents": "tool", "data": "json"}.get(tenant, "chat")
    req: dict = {"messages": [{"role": "user", "content": f"question {i}"}], "temperature": 0}
    if kind == "tool":
        req["tools"] = TOOLS
        ref = Answer("", (("get_weather", json.dumps({"city": rng.choice(("Oslo", "Lima", "Pune"))})),), "tool_calls", 12)
    elif kind == "json":
        req["response_format"] = {"type": "json_object"}
        ref = Answer(json.dumps({"k": rng.randint(0, 99), "v": rng.choice(WORDS)}), (), "stop", 14)
    else:
        ref = Answer(" ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 40))), (), "stop", 30)

    def variant(p: float) -> Answer:
        if rng.random() >= p:
            return ref
        return Answer(ref.text[: len(ref.text) // 2] + " " + " ".join(rng.choice(WORDS) for _ in range(8)), ref.calls,
                      "length", ref.tokens)

    record = parse_record({"endpoint": "chat", "id": f"p{i}", "tenant": tenant, "model_alias": "chat-small",
                           "request": req}, i + 1)
    return record, ref, variant(0.03), variant(0.02)


def build(path: Path, n: int, rng: random.Random) -> PairStore:
    """A store of `n` synthetic pairs, imported in one transaction."""
    export = path.with_suffix(".jsonl")
    with open(export, "w") as f:
        for i in range(n):
            record, ref, cand, twin = synthetic(rng, i)
            pair = {"reference": ref.to_dict(), "candidate": cand.to_dict(), "twin": twin.to_dict()}
            f.write(json.dumps({**record.to_json(), "pair": pair}) + "\n")
    store = SqliteStore(path)
    store.import_file(export)
    export.unlink()
    return store


def timed(f: Callable[[], T]) -> tuple[T, float]:
    """f's result and the seconds it took."""
    t0 = time.perf_counter()
    out = f()
    return out, time.perf_counter() - t0


def restarted(store: PairStore, s: ShadowSettings) -> dict:
    """A restarted proxy's first look."""
    return LiveJudgement(store, s).judge()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--new", type=int, default=100, help="pairs added before the incremental look")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gk-shadow-scale-"))
    try:
        run(args.sizes, args.new, work)
    finally:
        shutil.rmtree(work)  # 160 MB for 100,000 pairs


def run(sizes: list[int], new: int, work: Path) -> None:
    """Build, look and judge for each size; one line per size."""
    s = ShadowSettings()
    print(f"{'pairs':>7} {'first':>8} {f'+{new} look':>10} {'of which results':>17} {'restart':>8} {'scratch':>8}"
          f" {'scratch/look':>12}  same JSON", flush=True)
    for n in sizes:
        rng = random.Random(n)
        store = build(work / f"pairs-{n}.db", n, rng)
        live = LiveJudgement(store, s)
        _, first = timed(live.judge)
        for i in range(n, n + new):
            store.add(*synthetic(rng, i))
        data, look = timed(live.judge)
        _, results = timed(live.analysis.results)
        _, restart = timed(functools.partial(restarted, store, s))
        scratch_data, scratch = timed(functools.partial(judge_store, store, s, sticky=True))
        same = json.dumps(data, sort_keys=True) == json.dumps(scratch_data, sort_keys=True)
        print(f"{n:>7} {first:>7.2f}s {look:>9.3f}s {results:>16.3f}s {restart:>7.2f}s {scratch:>7.2f}s "
              f"{scratch / look:>11.0f}x  {'yes' if same else 'NO'}", flush=True)
        store.close()


if __name__ == "__main__":
    main()
