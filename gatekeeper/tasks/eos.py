"""EOS discipline: requests whose reply is one short word, which must end the turn at once."""

from __future__ import annotations

import random

from gatekeeper.tasks import vocab
from gatekeeper.tasks.sample import Sample, exact

TEMPLATES = ("Say {w} and nothing else.", "Answer with the single word {w}.", "Reply with one word: {w}",
             "Respond only with: {w}", "Just say {w}.")
SHORT = ("OK", "yes", "no", "done", "ready", "hello", "thanks", "stop", "fine", "true", "false")


def generate(rng: random.Random) -> Sample:
    """A short-answer request; the scorer also needs the evaluator to check the stop reason."""
    w = rng.choice(SHORT + vocab.COLORS + vocab.ANIMALS)
    prompt = rng.choice(TEMPLATES).format(w=w)
    return Sample(({"role": "user", "content": prompt},), None, w, "eos", {"needs_eos": True})


score = exact
