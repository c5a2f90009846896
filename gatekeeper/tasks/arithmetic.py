"""Short arithmetic: two-operand add (0-99), subtract (0-99, never negative), multiply (0-12)."""

from __future__ import annotations

import random

from gatekeeper.tasks.sample import Sample, exact

TEMPLATES = ("What is {a} {op} {b}?", "Compute {a} {op} {b}. Reply with the number only.",
             "{a} {op} {b} = ?")
OPS = ("+", "-", "*")


def generate(rng: random.Random, op: str | None = None) -> Sample:
    """An arithmetic question; `op` is '+', '-' or '*' (random when None)."""
    op = op or rng.choice(OPS)
    if op == "*":
        a, b = rng.randint(0, 12), rng.randint(0, 12)
        result = a * b
    else:
        a, b = rng.randint(0, 99), rng.randint(0, 99)
        if op == "-" and b > a:
            a, b = b, a
        result = a + b if op == "+" else a - b
    prompt = rng.choice(TEMPLATES).format(a=a, op=op, b=b)
    return Sample(({"role": "user", "content": prompt},), None, str(result), "arithmetic", {"op": op})


score = exact
