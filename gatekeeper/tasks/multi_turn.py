"""Multi-turn memory: personal facts stated in the first rounds of a long chat with rounds of very
uneven length, asked for in the last round (`meta["round"]` is that round's 1-based number)."""

from __future__ import annotations

import random
from typing import Any

from gatekeeper.endpoints.chat_types import ChatMessage
from gatekeeper.tasks import arithmetic, echo, long_output, vocab
from gatekeeper.tasks.sample import Sample, exact

FACTS: dict[str, tuple[str, Any]] = {
    # slot: (how it is stated, value generator); questions are "What is my {slot}?"
    "name": ("My name is {v}.", lambda r: r.choice(vocab.NAMES)),
    "city": ("I live in {v}.", lambda r: r.choice(vocab.CITIES)),
    "favorite color": ("My favorite color is {v}.", lambda r: r.choice(vocab.COLORS)),
    "pet": ("My pet is a {v}.", lambda r: r.choice(vocab.ANIMALS)),
    "locker number": ("My locker number is {v}.", lambda r: str(r.randint(100, 9999))),
    "project codename": ("My project codename is {v}.", vocab.code_string),
    "favorite food": ("My favorite food is {v}.", lambda r: r.choice(vocab.FOODS)),
}
ACKS = ("Got it.", "Noted.", "OK, I will remember that.")


def _chatter(rng: random.Random) -> tuple[str, str]:
    """One middle round: short, medium or long."""
    pick = rng.random()
    if pick < 0.3:
        s = arithmetic.generate(rng)
    elif pick < 0.6:
        s = echo.generate(rng)
    elif pick < 0.8:
        s = long_output.generate(rng, count=rng.randint(3, 25))
    else:
        text = " ".join(vocab.filler_sentence(rng) for _ in range(rng.randint(2, 14)))
        return f"Here is a note: {text} Reply with OK.", "OK"
    return s.messages[-1]["content"] or "", s.answer


def generate(rng: random.Random, rounds: int | None = None, num_facts: int | None = None) -> Sample:
    """A chat of `rounds` rounds (random 2-16 when None); facts in the first rounds, the question
    in the last."""
    rounds = rounds or rng.randint(2, 16)
    k = min(num_facts or rng.randint(1, 3), rounds - 1)
    slots = rng.sample(sorted(FACTS), k)
    values = {s: FACTS[s][1](rng) for s in slots}
    fact_rounds = sorted(rng.sample(range(min(rounds - 1, 3)), k)) if k <= min(rounds - 1, 3) else list(range(k))
    messages: list[ChatMessage] = []
    it = iter(slots)
    for i in range(rounds - 1):
        if i in fact_rounds:
            slot = next(it)
            user, reply = FACTS[slot][0].format(v=values[slot]), rng.choice(ACKS)
        else:
            user, reply = _chatter(rng)
        messages += [{"role": "user", "content": user}, {"role": "assistant", "content": reply}]
    asked = rng.choice(slots)
    messages.append({"role": "user", "content": f"What is my {asked}? Reply with the answer only."})
    return Sample(tuple(messages), None, values[asked], "multi_turn",
                  {"round": rounds, "slot": asked, "fact_round": fact_rounds[slots.index(asked)] + 1})


score = exact
