"""Long output: counting up or down to a requested length, which must end without looping."""

from __future__ import annotations

import random

from gatekeeper.tasks.sample import Sample, exact


def generate(rng: random.Random, count: int | None = None) -> Sample:
    """A counting request of `count` items (random 5-60 when None)."""
    n = count or rng.randint(5, 60)
    start = rng.randint(0, 100)
    down = rng.random() < 0.25
    nums = list(range(start + n - 1, start - 1, -1)) if down else list(range(start, start + n))
    if rng.random() < 0.5:
        sep, how = ", ", "separated by commas"
    else:
        sep, how = "\n", "one per line"
    verb = "Count down from" if down else "Count from"
    prompt = f"{verb} {nums[0]} to {nums[-1]}, {how}."
    return Sample(({"role": "user", "content": prompt},), None, sep.join(map(str, nums)), "long_output",
                  {"count": n})


score = exact
