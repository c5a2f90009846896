"""Synthetic stored pairs for the pair-store tests, the same for a given seed and index in any
process: chat, JSON and tool requests of a few tenants, a candidate that breaks for tenant
`beta` at `bad` rate and now and then elsewhere, a twin with a little noise, failed requests.

Run as a script it is one mirroring replica: `python store_pairs.py URL REPLICA FIRST COUNT
FLUSH_PAIRS` adds pairs FIRST..FIRST+COUNT-1 to the store and prints how many `add` accepted.
"""

from __future__ import annotations

import json
import random
import sys

from gatekeeper.traffic.answers import Answer
from gatekeeper.traffic.format import TrafficRecord, parse_record
from gatekeeper.traffic.measures import Measures, Pair, measure

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
WORDS = "the a model answer city weather report table value said".split()


class Counted:
    """Gate 5's `measure`, counting its calls (how many pairs a look measured)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, pair: Pair) -> Measures:
        self.calls += 1
        return measure(pair)


def pair(seed: int, i: int, bad: float = 0.3) -> tuple[TrafficRecord, Answer, Answer, Answer | None]:
    """Pair `i` of the synthetic stream `seed`."""
    rng = random.Random(seed * 1_000_003 + i)
    tenant = rng.choice(("acme", "acme", "beta", "internal"))
    kind = rng.choice(("chat", "chat", "json", "tool"))
    req: dict = {"messages": [{"role": "user", "content": f"question {i}"}], "temperature": 0}
    if kind == "json":
        req["response_format"] = {"type": "json_object"}
        ref = Answer(json.dumps({"k": rng.randint(0, 9)}), (), "stop", 8, e2e_s=0.2)
    elif kind == "tool":
        req["tools"] = TOOLS
        ref = Answer("", (("get_weather", json.dumps({"city": rng.choice(("Oslo", "Lima"))})),), "tool_calls", 9, e2e_s=0.3)
    else:
        ref = Answer(" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))), (), "stop", 7, e2e_s=0.4)

    def variant(p: float) -> Answer:
        roll = rng.random()
        if roll < 0.01:
            return Answer(error="http: 503")
        if roll >= p:
            return ref
        return rng.choice((Answer("!" * 30, (), "length", 30), Answer("not json {", (), "stop", 4),
                           Answer("I'm sorry, I can't help with that.", (), "stop", 9)))

    record = parse_record({"endpoint": "chat", "id": f"r{i}", "tenant": tenant, "request": req}, i + 1)
    return record, ref, variant(bad if tenant == "beta" else 0.01), variant(0.01)


if __name__ == "__main__":
    from gatekeeper.traffic.store import Batching, open_store

    url, replica, first, count, flush = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    with open_store(url, replica=replica, batching=Batching(flush, 0.2)) as store:
        accepted = sum(store.add(*pair(1, i)) for i in range(first, first + count))
    print(accepted)
