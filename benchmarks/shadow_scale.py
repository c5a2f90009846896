"""Gate 5's analysis at scale, without an engine: judge 1,000 / 10,000 / 100,000 stored synthetic
pairs (the measures and the statistics alone) and print the time and peak memory of each.

    python benchmarks/shadow_scale.py [--sizes 1000 10000 100000]

Pairs are written to a JSONL file first (one per line, as a pair store exports them), then
streamed from it twice by `judge_pairs`: the time is the judging, the memory the Python heap's
peak (tracemalloc) while judging. Synthetic mix: five tenants, chat / JSON / tool requests,
answers that mostly agree, 2% differing in the twin (noise) and 3% in the candidate.
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gatekeeper.gates.shadow.analysis import Thresholds  # noqa: E402
from gatekeeper.gates.shadow.answers import Answer  # noqa: E402
from gatekeeper.gates.shadow.judge import judge_pairs  # noqa: E402
from gatekeeper.gates.shadow.measures import Pair  # noqa: E402

TOOLS = ({"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},)
WORDS = "the a model answer city weather report table value json tool call said".split()


def synthetic(rng: random.Random, i: int) -> Pair:
    """One synthetic pair."""
    tenant = rng.choice(("internal", "support", "agents", "data", "assistant"))
    kind = {"agents": "tool", "data": "json"}.get(tenant, "chat")
    if kind == "tool":
        ref = Answer("", (("get_weather", json.dumps({"city": rng.choice(("Oslo", "Lima", "Pune"))})),), "tool_calls", 12)
    elif kind == "json":
        ref = Answer(json.dumps({"k": rng.randint(0, 99), "v": rng.choice(WORDS)}), (), "stop", 14)
    else:
        ref = Answer(" ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 40))), (), "stop", 30)

    def variant(p: float) -> Answer:
        if rng.random() >= p:
            return ref
        return Answer(ref.text[: len(ref.text) // 2] + " " + " ".join(rng.choice(WORDS) for _ in range(8)), ref.calls,
                      "length", ref.tokens)

    return Pair(f"p{i}", tenant, kind, "chat-small", kind == "json", TOOLS if kind == "tool" else None,
                variant(0.03), ref, variant(0.02))


def stored(path: Path) -> Iterator[Pair]:
    """The pairs of a JSONL file, one at a time."""
    with open(path) as f:
        for line in f:
            yield Pair.from_dict(json.loads(line))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gk-shadow-scale-"))
    previous: tuple[float, int] | None = None
    for n in args.sizes:
        path = work / f"pairs-{n}.jsonl"
        rng = random.Random(n)
        with open(path, "w") as f:
            for i in range(n):
                f.write(json.dumps(synthetic(rng, i).to_dict()) + "\n")

        tracemalloc.start()
        t0 = time.perf_counter()
        analysis = judge_pairs(functools.partial(stored, path), Thresholds(), 20)
        results = analysis.results()
        elapsed = time.perf_counter() - t0
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        overall = next(s for s in results if s.key == "all")
        dis = next(m for m in overall.metrics if m.name == "disagreement")
        per = elapsed / n * 1e6
        growth = f", x{elapsed / previous[0]:.1f} for x{n // previous[1]} pairs" if previous else ""
        print(f"{n:>7} pairs: {elapsed:6.2f} s ({per:.0f} µs/pair{growth}), peak heap {peak / 2**20:.1f} MiB, "
              f"{len(results)} slices; all: candidate {dis.candidate_rate:.1%} vs twin {dis.twin_rate:.1%}, "
              f"fired after {dis.fired_at}", flush=True)
        previous = (elapsed, n)


if __name__ == "__main__":
    main()
