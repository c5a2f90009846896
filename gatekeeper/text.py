"""Small text helpers shared by gates and renderers (no gate or report imports)."""

from __future__ import annotations


def first_divergence(a: str, b: str) -> int | None:
    """Index of the first character where `a` and `b` differ; None if they are equal."""
    if a == b:
        return None
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n
