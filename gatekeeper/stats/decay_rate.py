"""A session's quality decay rate (SQDR), as the long-chat bug class defines it
(docs/bug-classes.md): how much a measure falls per round from a conversation's first round to
its last. Gate 4's session-decay check and the live proxy's session figures both use it."""

from __future__ import annotations


def sqdr(rates: list[float]) -> float:
    """(rate at round 1 − rate at round n) / n; 0 for fewer than two rounds."""
    return (rates[0] - rates[-1]) / len(rates) if len(rates) > 1 else 0.0
