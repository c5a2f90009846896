"""Exact echo: `Reply with exactly: X` -> `X`, for words, numbers, punctuation and mixed scripts."""

from __future__ import annotations

import random

from gatekeeper.tasks import vocab
from gatekeeper.tasks.sample import Sample, exact

TEMPLATES = ("Reply with exactly: {x}", "Reply with exactly: {x}", "Reply with exactly: {x}",
             "Repeat exactly: {x}", "Say exactly this and nothing else: {x}")
KINDS = ("words", "number", "punctuation", "mixed", "ok")


def _payload(rng: random.Random, kind: str) -> str:
    if kind == "ok":
        return rng.choice(("OK", "OK", "ok", "Yes", "Done", "Ready"))
    if kind == "number":
        forms = (lambda: str(rng.randint(0, 10 ** rng.randint(1, 9))),
                 lambda: f"{rng.randint(0, 999)}.{rng.randint(0, 99):02d}",
                 lambda: "-" + str(rng.randint(1, 99999)),
                 lambda: " ".join(str(rng.randint(0, 999)) for _ in range(rng.randint(2, 5))))
        return rng.choice(forms)()
    if kind == "punctuation":
        parts = [rng.choice(vocab.WORDS) + rng.choice(vocab.PUNCT) for _ in range(rng.randint(1, 4))]
        return " ".join(parts)
    if kind == "mixed":
        pools = (vocab.WORDS, vocab.CYRILLIC, vocab.CJK, vocab.EMOJI, vocab.PUNCT)
        return " ".join(rng.choice(rng.choice(pools)) for _ in range(rng.randint(2, 6)))
    words = [rng.choice(vocab.WORDS) for _ in range(rng.randint(1, 8))]
    if rng.random() < 0.3:
        words[0] = words[0].capitalize()
    return " ".join(words)


def generate(rng: random.Random, kind: str | None = None) -> Sample:
    """An echo request; `kind` is one of KINDS (random when None)."""
    kind = kind or rng.choice(KINDS)
    x = _payload(rng, kind)
    prompt = rng.choice(TEMPLATES).format(x=x)
    return Sample(({"role": "user", "content": prompt},), None, x, "echo", {"kind": kind})


score = exact
