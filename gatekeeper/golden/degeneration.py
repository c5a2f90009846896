"""Signs that a model's output has degenerated, each needing no reference to judge.

The worst engine bugs do not crash: they make a model loop on a phrase, emit a wall of one
character (NaN logits under argmax decode to token 0, often `!`), or produce invalid UTF-8 that
the detokenizer turns into U+FFFD. These detectors find those shapes in a single output:

- `empty`: nothing but whitespace;
- `replacement_char`: U+FFFD anywhere;
- `char_run`: one character repeated more than `max_char_run` times in a row;
- `fill`: the whole answer is one character or one word repeated — at least `min_fill_symbols`
  times for a symbol (`!!!!`, what NaN logits decode to at any `max_tokens`), at least
  `min_fill_words` times for a letter, digit or word;
- `repeated_ngram`: a word n-gram occurring more than `max_ngram_repeats` times;
- `looping_tail`: the text ends in a block of 1..`max_period` characters repeated at least
  `min_tail_repeats` times, covering at least `min_tail_chars` characters.

Thresholds are generous on purpose: a count from 1 to 60 or a list of distinct words must pass.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

REPLACEMENT_CHAR = "\ufffd"


@dataclass(frozen=True)
class DegenerationLimits:
    """Thresholds for `find_degeneration`; the defaults suit short and medium golden answers."""

    allow_empty: bool = False
    min_fill_symbols: int = 4
    min_fill_words: int = 8
    max_char_run: int = 16
    ngram: int = 3
    max_ngram_repeats: int = 4
    max_period: int = 64
    min_tail_repeats: int = 4
    min_tail_chars: int = 24


@dataclass(frozen=True)
class Degeneration:
    """One finding: which detector fired, a readable explanation and the character offset."""

    kind: str
    detail: str
    offset: int


def find_degeneration(text: str, limits: DegenerationLimits = DegenerationLimits()) -> Degeneration | None:
    """The first sign of degeneration in `text`, or None when it looks healthy."""
    if not text.strip():
        if limits.allow_empty:
            return None
        return Degeneration("empty", "the output is empty", 0)
    bad = text.find(REPLACEMENT_CHAR)
    if bad >= 0:
        return Degeneration("replacement_char", f"U+FFFD (invalid UTF-8 decoded) at offset {bad}", bad)
    run = longest_char_run(text)
    if run[1] > limits.max_char_run:
        ch, length, start = run
        return Degeneration("char_run", f"{ch!r} repeated {length} times in a row", start)
    fill = filled_with(text)
    if fill is not None:
        unit, count = fill
        least = limits.min_fill_symbols if len(unit) == 1 and not unit.isalnum() else limits.min_fill_words
        if count >= least:
            return Degeneration("fill", f"the whole answer is {unit!r} repeated {count} times", len(text) - len(text.lstrip()))
    tail = looping_tail(text, limits.max_period, limits.min_tail_repeats, limits.min_tail_chars)
    if tail is not None:
        period, repeats, start = tail
        return Degeneration("looping_tail", f"the output ends looping on {text[start:start + period]!r} ({repeats} times)", start)
    gram = most_repeated_ngram(text, limits.ngram)
    if gram is not None and gram[1] > limits.max_ngram_repeats:
        words, count = gram
        return Degeneration("repeated_ngram", f"the {limits.ngram}-gram {words!r} occurs {count} times", max(0, text.find(words)))
    return None


def filled_with(text: str) -> tuple[str, int] | None:
    """(unit, count) when the whole stripped text is one character, or one whitespace-separated
    word, repeated; None otherwise."""
    body = text.strip()
    if body and len(set(body)) == 1:
        return body[0], len(body)
    words = body.split()
    if len(words) > 1 and len(set(words)) == 1:
        return words[0], len(words)
    return None


def longest_char_run(text: str) -> tuple[str, int, int]:
    """(character, run length, start offset) of the longest run of one non-space character."""
    best = ("", 0, 0)
    for m in re.finditer(r"(\S)\1*", text):
        if len(m.group(0)) > best[1]:
            best = (m.group(1), len(m.group(0)), m.start())
    return best


def most_repeated_ngram(text: str, n: int) -> tuple[str, int] | None:
    """The most frequent whitespace-word n-gram and its count (None if fewer than n words)."""
    words = text.split()
    if len(words) < n:
        return None
    counts = Counter(" ".join(words[i:i + n]) for i in range(len(words) - n + 1))
    gram, count = counts.most_common(1)[0]
    return gram, count


def looping_tail(text: str, max_period: int, min_repeats: int, min_chars: int) -> tuple[int, int, int] | None:
    """(period, repeats, start offset) when text ends with a block repeated back to back."""
    for period in range(1, min(max_period, len(text) // min_repeats) + 1):
        unit = text[-period:]
        repeats, end = 1, len(text) - period
        while end - period >= 0 and text[end - period:end] == unit:
            repeats += 1
            end -= period
        if repeats >= min_repeats and repeats * period >= min_chars:
            return period, repeats, end
    return None
