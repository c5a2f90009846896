"""Needle retrieval: a key planted at a given depth of filler text, then asked for.

Length is measured in tokens of the whole rendered prompt when a `count_tokens` function is given
(the evaluator passes the model's tokenizer); otherwise it is approximated as 4 characters a token.
"""

from __future__ import annotations

import random
from typing import Callable

from gatekeeper.tasks import vocab
from gatekeeper.tasks.sample import Sample, exact

KINDS = ("passkey", "code", "number", "city", "password")
_OVERHEAD_TOKENS = 48  # template, needle and question, roughly


def _value(rng: random.Random, kind: str) -> str:
    if kind == "number":
        return str(rng.randint(10000, 99999))
    if kind == "city":
        return rng.choice(vocab.CITIES)
    return vocab.code_string(rng)


def generate(rng: random.Random, context_tokens: int | None = None, depth: float | None = None,
             count_tokens: Callable[[str], int] | None = None) -> Sample:
    """A needle in ~`context_tokens` of filler (random 64-2048 when None) at `depth` in [0, 1]."""
    length = context_tokens or rng.randint(64, 2048)
    depth = rng.random() if depth is None else depth
    count = count_tokens or (lambda s: max(1, len(s) // 4))
    kind = rng.choice(KINDS)
    value = _value(rng, kind)
    needle = f"The secret {kind} is {value}."
    budget = max(0, length - _OVERHEAD_TOKENS)
    sentences: list[str] = []
    used = 0
    while True:
        s = filler_sentence = vocab.filler_sentence(rng)
        n = count(" " + filler_sentence)
        if used + n > budget:
            break
        sentences.append(s)
        used += n
    sentences.insert(round(depth * len(sentences)), needle)
    question = f"What is the secret {kind}? Reply with the {kind} only."
    prompt = " ".join(sentences) + "\n\n" + question
    return Sample(({"role": "user", "content": prompt},), None, value, "needle",
                  {"context_tokens": length, "depth": depth, "kind": kind})


score = exact
