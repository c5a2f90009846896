"""Needle prompts at chosen lengths: filler, a planted secret at a depth, the question last.

The format is the one gk-tiny learned ("The secret {kind} is {value}." somewhere in filler,
then "What is the secret {kind}? Reply with the {kind} only."). A prompt is sized by whole
filler sentences, then padded to the exact token count (see `tokens.TokenCounter.fit`).
Prompts of one length share their filler, so the depths differ only in where the needle sits.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass

from gatekeeper.endpoints.chat_types import ChatMessage
from gatekeeper.gates.longctx import tasks
from gatekeeper.gates.longctx.tokens import Messages, TokenCounter


@dataclass(frozen=True)
class NeedlePrompt:
    """One needle prompt: its messages, the secret, where it sits, and its length in tokens."""

    messages: Messages
    kind: str
    value: str
    depth: float
    tokens: int
    exact: bool

    @property
    def question(self) -> str:
        """The last user turn's question."""
        return tasks.needle_question(self.kind)


def needle_builder(words: list[str], kind: str, value: str, depth: float, n: int,
                   prefix: Messages | None = None) -> Callable[[str], Messages]:
    """build(pad) -> messages: the first `n` filler words with the needle sentence at the
    sentence boundary nearest `depth` of the way through."""
    body = list(words[:n])
    ends = [0] + [i + 1 for i, w in enumerate(body) if w.endswith(".")] + [len(body)]
    at = min(ends, key=lambda i: abs(i - depth * len(body)))
    body[at:at] = tasks.needle_sentence(kind, value).split(" ")
    text = " ".join(body)

    def build(pad: str) -> Messages:
        content = f"{text}{pad}\n\n{tasks.needle_question(kind)}"
        return [*(prefix or []), {"role": "user", "content": content}]

    return build


def words_for(counter: TokenCounter, make: Callable[[int], Messages], target: int, start: int) -> int:
    """The largest filler-word count (about) whose prompt is at most `target` tokens, found with
    a few counts by proportional steps."""
    base = counter.count(make(0))
    n = max(1, start)
    for _ in range(5):
        c = counter.count(make(n))
        per = max(1.0, (c - base) / n)
        if c <= target and target - c < 3 * per:
            return n
        n = max(0, int((target - base) / per))
    while n > 0 and counter.count(make(n)) > target:
        n -= 1
    return n


def needle_prompts(counter: TokenCounter, rng: random.Random, target: int, depths: list[float],
                   kind: str | None = None, prefix: Messages | None = None) -> list[NeedlePrompt]:
    """One prompt per depth at `target` tokens, sharing filler, kind and value."""
    kind = kind or rng.choice(tasks.NEEDLE_KINDS)
    value = tasks.needle_value(rng, kind)
    pool = " ".join(tasks.filler(rng, max(8, target // 6))).split(" ")
    n = words_for(counter, lambda k: needle_builder(pool, kind, value, 0.0, k, prefix)(""), target, target // 3)
    out = []
    for depth in depths:
        messages, count, exact = counter.fit(needle_builder(pool, kind, value, depth, n, prefix), target)
        out.append(NeedlePrompt(messages, kind, value, depth, count, exact))
    return out


def padded_variants(counter: TokenCounter, rng: random.Random, center: int, offsets: list[int]) -> list[NeedlePrompt]:
    """Needle prompts (needle at the head) of exactly `center + offset` tokens each, sharing one
    filler and secret and differing only in padding: a block-boundary triple B·k−1, B·k, B·k+1."""
    kind = rng.choice(tasks.NEEDLE_KINDS)
    value = tasks.needle_value(rng, kind)
    pool = " ".join(tasks.filler(rng, max(8, center // 6))).split(" ")
    def make(k: int) -> Messages:
        return needle_builder(pool, kind, value, 0.0, k)("")

    n = words_for(counter, make, max(1, center + min(offsets) - 3), center // 3)
    out = []
    for offset in offsets:
        messages, count, exact = counter.fit(needle_builder(pool, kind, value, 0.0, n), center + offset)
        out.append(NeedlePrompt(messages, kind, value, 0.0, count, exact))
    return out


def answer_of(text: str) -> str:
    """An answer as scored: surrounding whitespace removed."""
    return text.strip()


def first_user_text(messages: Sequence[ChatMessage]) -> str:
    """The last user message's text, for evidence."""
    return next((str(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")
