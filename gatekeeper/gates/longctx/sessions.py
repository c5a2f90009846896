"""Scripted multi-turn sessions for the decay check: identical requests for both targets.

Every round's request is the session's canonical history (facts with their acknowledgements,
chatter with its correct replies — never a model's own output) followed by a recall question
about a fact planted earlier, so round r is byte-for-byte the same request for the reference
and the candidate, and a wrong answer is the engine's doing, not an earlier wrong answer.

Histories grow unevenly (the policy's pattern, e.g. +100, +5, +200 tokens; a round cannot add
less than one short exchange, so tiny steps come out at some 20-35 tokens), each session
starting at a different point of the pattern, and every request is steered to B·k−1, B·k or
B·k+1 tokens (cycling), so the rounds cross KV-block boundaries at and around the edge.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from gatekeeper.endpoints.chat_types import ChatMessage
from gatekeeper.gates.longctx import tasks
from gatekeeper.gates.longctx.tokens import Messages, TokenCounter

OFFSETS = (-1, 0, 1)
_NOTE = "Here is a note: {text}{pad} Reply with OK."


@dataclass(frozen=True, kw_only=True)
class Round:
    """One request of a session: messages, the fact asked and its answer, its length."""

    session: int
    index: int  # 1-based
    messages: Messages
    slot: str
    answer: str
    planted_in: int  # the round before whose question the fact was planted (1 = setup)
    tokens: int
    exact: bool


@dataclass(frozen=True)
class SessionPlan:
    """What shapes the sessions (from the policy)."""

    sessions: int
    rounds: int
    facts: int
    growth: tuple[int, ...]
    block_size: int
    max_tokens: int  # prompt tokens a request may not exceed (context minus answer room)


def steer(prev: int, growth: int, offset: int, block: int, minimum: int) -> int:
    """The length B·k+offset nearest prev+growth that still grows by at least `minimum`."""
    k = round((prev + growth - offset) / block)
    while block * k + offset < prev + minimum:
        k += 1
    return block * k + offset


def build_session(counter: TokenCounter, plan: SessionPlan, seed: int, index: int) -> list[Round]:
    """The rounds of session `index` (deterministic in seed and index)."""
    rng = random.Random(f"{seed}:longctx:session:{index}")
    slots = rng.sample(tasks.FACT_SLOTS, min(plan.facts, len(tasks.FACT_SLOTS)))
    planted: list[tuple[str, str, int]] = []  # (slot, value, round)
    history: Messages = []
    words = " ".join(tasks.filler(rng, 40 * plan.rounds)).split(" ")
    used = 0
    rounds: list[Round] = []
    prev = 0
    rate = 1.5  # tokens a filler word, refined as counts come in
    for r in range(1, plan.rounds + 1):
        added: Messages = []
        if len(planted) < len(slots):
            statement, value = tasks.fact(rng, slots[len(planted)])
            planted.append((slots[len(planted)], value, r))
            added += [{"role": "user", "content": statement}, {"role": "assistant", "content": rng.choice(tasks.ACKS)}]
        growth = plan.growth[(r - 1 + index) % len(plan.growth)]
        if r > 1 and growth >= 60:
            user, reply = tasks.chatter(rng)
            added += [{"role": "user", "content": user}, {"role": "assistant", "content": reply}]
        slot, value, planted_in = planted[(r - 1) % len(planted)] if r > 1 else planted[0]
        question: ChatMessage = {"role": "user", "content": tasks.fact_question(slot)}
        base = history + added
        fixed = counter.count([*base, {"role": "user", "content": _NOTE.format(text="", pad="")},
                               {"role": "assistant", "content": "OK"}, question])
        target = steer(prev, growth, OFFSETS[(r + index) % 3], plan.block_size, fixed - prev if r > 1 else 0)
        if target > plan.max_tokens:
            break
        n = max(0, int((target - fixed - 2) / rate))
        for _ in range(3):
            text = " ".join(words[used:used + n])

            def build(pad: str, text: str = text, base: Messages = base, question: ChatMessage = question) -> Messages:
                return [*base, {"role": "user", "content": _NOTE.format(text=text, pad=pad)},
                        {"role": "assistant", "content": "OK"}, question]

            messages, count, exact = counter.fit(build, target)
            if count <= target or n == 0:
                break
            n = max(0, n - int((count - target) / rate) - 2)  # the words alone overshot
        if n:
            rate = max(1.0, min(4.0, (count - fixed) / n))
        used += n
        history = messages[:-1]
        rounds.append(Round(session=index, index=r, messages=messages, slot=slot, answer=value, planted_in=planted_in,
                            tokens=count, exact=exact))
        prev = count
    return rounds
