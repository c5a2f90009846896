"""Side-by-side text with the first divergence: where two answers stop agreeing.

The report shows the common prefix plainly and the rest of each text inside a <mark>, so the
reader's eye lands on the first differing character. Very long texts are shortened around that
point (the identical prefix keeps only its end, each tail its beginning) and say so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gatekeeper.text import first_divergence

MAX_PREFIX_CHARS = 2000
# C0 controls (other than tab and newline) and DEL are invisible on screen but can be the very
# difference; show them as their Unicode "control picture" (ESC → ␛, NUL → ␀).
_CONTROL_PICTURES = {c: 0x2400 + c for c in range(0x20) if c not in (0x09, 0x0A)} | {0x7F: 0x2421}
MAX_TAIL_CHARS = 4000


@dataclass(frozen=True)
class Side:
    """One side of a pair, cut at the divergence: `prefix` (agreed) then `tail` (marked)."""

    prefix: str
    tail: str
    omitted_before: int  # characters of the agreed prefix not shown
    omitted_after: int  # characters of the tail not shown
    ended: bool  # the text ends at the divergence (the other one goes on)


@dataclass(frozen=True)
class TextDiff:
    """A reference/candidate pair ready to render."""

    title: str
    prompt: str | None
    reference: Side
    candidate: Side
    divergence: int | None
    identical: bool


def visible(text: str) -> str:
    """`text` with control characters replaced by visible symbols (same length)."""
    return text.translate(_CONTROL_PICTURES)


def _side(text: str, cut: int | None) -> Side:
    if cut is None:  # identical texts: show the beginning
        shown = visible(text[:MAX_TAIL_CHARS])
        return Side(prefix=shown, tail="", omitted_before=0, omitted_after=len(text) - len(shown), ended=False)
    prefix, tail = text[:cut], text[cut:]
    before = max(0, len(prefix) - MAX_PREFIX_CHARS)
    after = max(0, len(tail) - MAX_TAIL_CHARS)
    return Side(
        prefix=visible(prefix[before:]),
        tail=visible(tail[:MAX_TAIL_CHARS]),
        omitted_before=before,
        omitted_after=after,
        ended=not tail,
    )


def text_pair(title: str, data: Mapping[str, object]) -> TextDiff:
    """Build a `TextDiff` from a "text_pair" evidence payload.

    The payload's `divergence` is trusted when it is a valid index; otherwise it is computed.
    """
    ref = str(data.get("reference") or "")
    cand = str(data.get("candidate") or "")
    prompt = data.get("prompt")
    prompt = None if prompt is None else visible(str(prompt))
    given = data.get("divergence")
    if ref == cand:
        div = None
    elif isinstance(given, int) and not isinstance(given, bool) and 0 <= given <= min(len(ref), len(cand)):
        div = given
    else:
        div = first_divergence(ref, cand)
    return TextDiff(
        title=title,
        prompt=prompt,
        reference=_side(ref, div),
        candidate=_side(cand, div),
        divergence=div,
        identical=div is None,
    )
