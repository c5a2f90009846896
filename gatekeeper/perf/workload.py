"""What the performance gate sends: seeded requests of controlled length, synthetic or recorded.

- `synthetic` (the default): seeded word sequences sized to an input-token range. The tokens per
  word are measured once with the target's `/tokenize` where it has one (`calibrated`), else
  ~1.3 is assumed.
- `traffic`: requests drawn (seeded) from a traffic file (docs/traffic-format.md), replayed as
  recorded except `max_tokens` (the output range), temperature 0 and no streaming options.
Output lengths are fixed per request with `ignore_eos` (vLLM's extension; a server that refuses
it gets requests without it, and the report says output lengths were not controlled). The same
seed gives the same requests to every target.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from gatekeeper.endpoints.client import Endpoint
from gatekeeper.errors import EndpointError
from gatekeeper.perf.loadgen import LoadRequest

_WORDS = ("apple river stone cloud seven garden lamp orange window music paper silver forest bridge candle "
          "yellow engine market winter number table planet coffee rabbit summer pencil ocean mirror ladder "
          "kitchen thunder cotton island basket violin harbor meadow lantern").split()
ASSUMED_TOKENS_PER_WORD = 1.3
_DROPPED = ("model", "stream", "stream_options", "n", "max_tokens", "max_completion_tokens", "temperature", "seed")


@dataclass(frozen=True)
class Workload:
    """Request shapes: input and output token ranges (inclusive), whether to send ignore_eos,
    and — for the `traffic` source — the recorded request bodies as (endpoint, body)."""

    input_tokens: tuple[int, int] = (48, 160)
    output_tokens: tuple[int, int] = (32, 32)
    ignore_eos: bool = True
    tokens_per_word: float = ASSUMED_TOKENS_PER_WORD
    recorded: tuple[tuple[str, dict[str, Any]], ...] = ()
    calibration: str = "assumed ~1.3 tokens per word"
    chat: bool = False  # synthetic prompts sent as one user message to /v1/chat/completions

    @property
    def source(self) -> str:
        """"traffic" or "synthetic"."""
        return "traffic" if self.recorded else "synthetic"

    def requests(self, n: int, seed: int, variant: int = 0) -> list[LoadRequest]:
        """`n` requests, the same for a seed whatever the target. Another `variant` of a seed
        keeps the synthetic requests' lengths and draws other words, so a server's prefix cache
        cannot tell a repeat (recorded requests cannot be reworded: another variant is another
        draw)."""
        rng = random.Random(f"{seed}/{variant}" if self.recorded else seed)  # lengths, recorded draws
        words_rng = random.Random(f"{seed}/{variant}")
        out = []
        for i in range(n):
            max_tokens = rng.randint(*self.output_tokens)
            if self.recorded:
                endpoint, recorded = self.recorded[rng.randrange(len(self.recorded))]
                body = {k: v for k, v in recorded.items() if k not in _DROPPED}
                kind = "chat" if endpoint == "chat" else "completions"
            else:
                words = max(1, round(rng.randint(*self.input_tokens) / self.tokens_per_word))
                prompt = f"Request {i}: " + " ".join(words_rng.choice(_WORDS) for _ in range(words))
                body = {"messages": [{"role": "user", "content": prompt}]} if self.chat else {"prompt": prompt}
                kind = "chat" if self.chat else "completions"
            body.update({"max_tokens": max_tokens, "temperature": 0.0})
            if self.ignore_eos:
                body["ignore_eos"] = True
            out.append(LoadRequest(body, kind))  # type: ignore[arg-type]  # kind is one of the two literals
        return out

    def uncontrolled(self) -> Workload:
        """The same workload without ignore_eos."""
        return replace(self, ignore_eos=False)

    def as_chat(self) -> Workload:
        """The same prompts as chat messages (for a server without /v1/completions)."""
        return replace(self, chat=True)


def calibrated(workload: Workload, ep: Endpoint) -> Workload:
    """The synthetic workload with its tokens per word measured by `ep`'s /tokenize (unchanged
    where the target has none, saying so)."""
    if workload.recorded:
        return workload
    text = " ".join(_WORDS * 5)
    try:
        tokens = len(ep.tokenize(text))
    except EndpointError as e:
        return replace(workload, calibration=f"assumed ~{ASSUMED_TOKENS_PER_WORD} tokens per word (/tokenize: {e.kind})")
    per_word = max(0.2, tokens / (len(_WORDS) * 5))
    return replace(workload, tokens_per_word=per_word, calibration=f"{per_word:.2f} tokens per word (measured by /tokenize)")


def from_traffic(workload: Workload, bodies: Sequence[tuple[str, dict[str, Any]]]) -> Workload:
    """The workload drawing its requests from recorded (endpoint, body) pairs."""
    return replace(workload, recorded=tuple(bodies), calibration="recorded requests")
