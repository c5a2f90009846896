"""Small text helpers shared by gates and renderers (no gate or report imports)."""

from __future__ import annotations

import datetime as dt


def utc_now() -> str:
    """Now as ISO 8601 in UTC, to the millisecond (check, gate and request timestamps)."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")


def first_divergence(a: str, b: str) -> int | None:
    """Index of the first character where `a` and `b` differ; None if they are equal."""
    if a == b:
        return None
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def utf8_safe(text: str) -> str:
    """`text` encodable as UTF-8: surrogate pairs (from JSON `\\ud83d\\ude00` escapes) become
    the character they encode, and lone surrogates (half an emoji cut at a token boundary)
    become U+FFFD. Unchanged, and fast, when the text is already clean."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
