"""The earlier chat before gate 4's tool and JSON cases: canonical exchanges (correct replies) of a
wanted length, counted by the target's tokenizer and fitted to the room a prompt has."""

from __future__ import annotations

import random

from gatekeeper.gates.longctx import tasks
from gatekeeper.gates.longctx.tokens import Messages, TokenCounter


def history(rng: random.Random, tokens: int, counter: TokenCounter) -> Messages:
    """Canonical chatter (correct replies) of at least `tokens` tokens, counted."""
    out: Messages = []
    while counter.count(out or [{"role": "user", "content": ""}]) < tokens:
        user, reply = tasks.chatter(rng)
        out += [{"role": "user", "content": user}, {"role": "assistant", "content": reply}]
    return out


def fitted_history(rng: random.Random, want: int, base: Messages, room: int, counter: TokenCounter) -> Messages | None:
    """History of about `want` tokens that, put before `base`, keeps the prompt within `room`
    tokens (whole exchanges dropped from the front); None when even `base` alone does not fit."""
    free = room - counter.count(base)
    if free < 0:
        return None
    pre = history(rng, min(want, free), counter)
    while pre and counter.count([*pre, *base]) > room:
        pre = pre[2:]
    return pre
