"""The shipped sample traffic: a realistic mix generated from `gatekeeper/tasks`, so the default
`gatekeeper run` replays gate 5 on something shaped like production traffic.

    python -m gatekeeper.traffic.sample --out golden_sets/traffic/sample.jsonl   # regenerate (seed 0)

Five tenants with different mixes, arriving as a Poisson process (2 requests/s):
- `internal` (15%, the low-risk canary tenant): short deterministic chats (echo, arithmetic, EOS);
- `support` (25%): short chats, multilingual text, refusals; one in three sampled (temperature 0.7);
- `agents` (20%): tool calls from a wide menu of 5-6 tools, some with a tool result to answer;
- `data` (20%): JSON answers asked with `response_format: json_object`, and code;
- `assistant` (20%, model alias `chat-long`): long multi-turn chats and long answers.

A request whose family is scored by exact match (echo, arithmetic, EOS, multilingual, refusal,
multi-turn, long output, and a tool call's answer after its result) carries its answer as
`expected`: gate 5 judges task success on it.
"""

from __future__ import annotations

import argparse
import random
from typing import Any

from gatekeeper.endpoints.chat_types import ToolDefinition
from gatekeeper import tasks
from gatekeeper.tasks import tool_call
from gatekeeper.traffic.format import TrafficRecord, write_traffic

START = 1764493200.0  # 2025-11-30T09:00:00Z
RATE = 2.0  # requests per second
TENANTS: tuple[tuple[str, float, tuple[str, ...]], ...] = (
    ("internal", 0.15, ("echo", "arithmetic", "eos")),
    ("support", 0.25, ("echo", "multilingual", "refusal", "arithmetic")),
    ("agents", 0.20, ("tool_call",)),
    ("data", 0.20, ("json", "json", "code")),
    ("assistant", 0.20, ("multi_turn", "long_output")),
)
MAX_TOKENS = {"long_output": 96, "multi_turn": 48, "code": 96, "tool_call": 96, "json": 80}
EXACT = ("echo", "arithmetic", "eos", "multilingual", "refusal", "multi_turn", "long_output")
"""Families scored by exact match (`tasks.sample.exact`): their answer is the request's `expected`."""


def _wide_menu(rng: random.Random, tools: tuple[ToolDefinition, ...] | None) -> list[ToolDefinition]:
    """The sample's tools plus unused ones, up to 5-6 (the agents tenant's wide menus)."""
    menu = list(tools or ())
    names = {t["function"]["name"] for t in menu}
    spare = [t.definition() for t in tool_call.TOOLS if t.name not in names]
    rng.shuffle(spare)
    menu += spare[: max(0, rng.randint(5, 6) - len(menu))]
    rng.shuffle(menu)
    return menu


def _tenant(u: float) -> tuple[str, tuple[str, ...]]:
    """The tenant a uniform draw `u` falls on, by the tenants' shares."""
    for name, share, families in TENANTS:
        if u < share:
            return name, families
        u -= share
    return TENANTS[-1][0], TENANTS[-1][2]


def record(rng: random.Random, i: int, t: float) -> TrafficRecord:
    """The i-th request, arriving at time t."""
    tenant, families = _tenant(rng.random())
    family = rng.choice(families)
    sample = tasks.generate(family, rng)
    request: dict[str, Any] = {"messages": tool_call.openai_messages(sample.messages, str(i)), "max_tokens": MAX_TOKENS.get(family, 48),
                               "temperature": 0.0}
    if tenant == "agents":
        request["tools"] = _wide_menu(rng, sample.tools)
    elif sample.tools:
        request["tools"] = list(sample.tools)
    if family == "json":
        request["response_format"] = {"type": "json_object"}
    if tenant == "support" and rng.random() < 1 / 3:
        request["temperature"] = 0.7
    tags = [family] + (["stream"] if rng.random() < 0.1 else [])
    if "stream" in tags:
        request["stream"] = True
    exact = family in EXACT or (family == "tool_call" and sample.meta["with_result"])
    return TrafficRecord(line=0, id=f"req-{i:04d}", endpoint="chat", request=request, tenant=tenant,
                         model_alias="chat-long" if tenant == "assistant" else "chat-small", timestamp=round(t, 3), tags=tuple(tags),
                         expected=sample.answer.strip() if exact else None)


def generate(n: int, seed: int = 0) -> list[TrafficRecord]:
    """`n` requests from `seed`."""
    rng = random.Random(seed)
    t, out = START, []
    for i in range(n):
        t += rng.expovariate(RATE)
        out.append(record(rng, i, t))
    return out


def main() -> None:
    """Write the sample (atomically)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="golden_sets/traffic/sample.jsonl")
    ap.add_argument("-n", type=int, default=1200)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    n = write_traffic(args.out, generate(args.n, args.seed))
    print(f"wrote {n} requests to {args.out}")


if __name__ == "__main__":
    main()
