"""What the performance gate sends: seeded synthetic requests of controlled length.

Prompts are seeded word sequences sized to an input-token range (the words-per-token ratio is
measured once with the target's `/tokenize` where it has one, else ~1.3 tokens per word is
assumed); output lengths are fixed per request with `ignore_eos` (vLLM's extension; a server that
refuses it gets requests without it and the report says output lengths were not controlled).
The same seed gives the same requests to every target.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from gatekeeper.perf.loadgen import LoadRequest

_WORDS = ("apple river stone cloud seven garden lamp orange window music paper silver forest bridge candle "
          "yellow engine market winter number table planet coffee rabbit summer pencil ocean mirror ladder "
          "kitchen thunder cotton island basket violin harbor meadow lantern").split()
ASSUMED_TOKENS_PER_WORD = 1.3


@dataclass(frozen=True)
class Workload:
    """Request shapes: input and output token ranges (inclusive), and whether to send ignore_eos."""

    input_tokens: tuple[int, int] = (48, 160)
    output_tokens: tuple[int, int] = (32, 32)
    ignore_eos: bool = True
    tokens_per_word: float = ASSUMED_TOKENS_PER_WORD

    def requests(self, n: int, seed: int) -> list[LoadRequest]:
        """`n` completions requests, the same for a seed whatever the target."""
        rng = random.Random(seed)
        out = []
        for i in range(n):
            words = max(1, round(rng.randint(*self.input_tokens) / self.tokens_per_word))
            text = " ".join(rng.choice(_WORDS) for _ in range(words))
            body: dict = {"prompt": f"Request {i}: {text}", "max_tokens": rng.randint(*self.output_tokens),
                          "temperature": 0.0}
            if self.ignore_eos:
                body["ignore_eos"] = True
            out.append(LoadRequest(body))
        return out
