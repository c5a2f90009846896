"""The assertion library of golden cases: every type, and `build_assertion` to make one.

Absolute assertions judge one answer alone; relative ones (`equals_reference`,
`similar_to_reference`) compare it with the reference's answer to the same case. An absolute
failure is `hard` when it needs no reference to be wrong (empty or degenerate output, invalid
JSON where JSON is required, tool-call arguments that are not JSON); the golden gate fails those
on their own and judges every other failure against what the reference did.

Types (parameters in brackets):
- `equals` [value, strip=true, ignore_case=false] — the text equals value;
- `contains` [value: str | list, ignore_case] — every string appears in the text;
- `regex` [pattern, full=false, ignore_case] — re.search (or fullmatch) on the stripped text;
- `json_schema` [schema] — JSON valid under a JSON Schema (structured.py);
- `python_ast` [defines] — Python source that parses (structured.py);
- `tool_call` [calls, ordered=false, content=any|empty] — BFCL-style call matching (structured.py);
- `no_degeneration` [allow_empty, min_fill_symbols, min_fill_words, max_char_run, ngram, max_ngram_repeats, ...] — hard;
- `finish_reason` [value: str | list] — e.g. "stop", or "tool_calls";
- `length` [min_chars, max_chars, min_tokens, max_tokens] — bounds on the answer;
- `refusal` [expect=true] — the answer is (or, expect false, is not) a refusal;
- `equals_reference` [] — the same answer as the reference (text, tool names and arguments);
- `similar_to_reference` [threshold] — difflib ratio to the reference's answer ≥ threshold
  (default: the gate's `similar_threshold` setting).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from gatekeeper.golden import structured  # noqa: F401  (registers json_schema, python_ast, tool_call)
from gatekeeper.golden.answer import answer_key, clip, render_answer
from gatekeeper.golden.assertion_base import (
    PASSED,
    REGISTRY,
    Assertion,
    Outcome,
    SpecError,
    build_assertion,
    need,
    need_type,
    register,
)
from gatekeeper.golden.degeneration import DegenerationLimits, find_degeneration
from gatekeeper.endpoints.responses import ChatResponse

__all__ = ["REGISTRY", "Assertion", "Outcome", "SpecError", "build_assertion", "REFUSAL_MARKERS", "DEGENERATE_OUTPUT"]

REFUSAL_MARKERS = (r"\bI can(?:'|’|no)t\b", r"\bI won(?:'|’)?t\b", r"\bI(?:'|’)m sorry\b", r"\bI am sorry\b",
                   r"\bI(?:'|’)m not able to\b", r"\bI am not able to\b", r"\bunable to (?:help|assist)\b",
                   r"\bcannot (?:help|assist)\b")
"""Phrases that mark a refusal (case-insensitive), after common instruction models' wording."""
DEGENERATE_OUTPUT = "degenerate output"
"""How a failed `no_degeneration` assertion's reason starts (the correctness table counts these)."""


def _norm(text: str, strip: bool, ignore_case: bool) -> str:
    text = text.strip() if strip else text
    return text.casefold() if ignore_case else text


@register
@dataclass(frozen=True)
class Equals(Assertion):
    """The text equals `value` (surrounding whitespace ignored unless `strip` is false)."""

    type: ClassVar[str] = "equals"
    value: str = ""
    strip: bool = True
    ignore_case: bool = False

    def validate(self) -> None:
        need_type(self.value, str, "value", "a string")

    def check(self, response: ChatResponse, tools: Any) -> Outcome:
        if _norm(response.text, self.strip, self.ignore_case) == _norm(self.value, self.strip, self.ignore_case):
            return PASSED
        return Outcome(False, f"expected exactly {clip(self.value)}, got {clip(response.text)}")


@register
@dataclass(frozen=True)
class Contains(Assertion):
    """The text contains `value` (a string, or a list of strings that must all appear)."""

    type: ClassVar[str] = "contains"
    value: Any = ""
    ignore_case: bool = False

    def validate(self) -> None:
        ok = isinstance(self.value, str) or (isinstance(self.value, list) and all(isinstance(v, str) for v in self.value))
        need(ok and bool(self.value), "value", "contains needs a non-empty string or list of strings")

    def check(self, response: ChatResponse, tools: Any) -> Outcome:
        wanted = [self.value] if isinstance(self.value, str) else list(self.value)
        text = _norm(response.text, False, self.ignore_case)
        missing = [w for w in wanted if _norm(w, False, self.ignore_case) not in text]
        return PASSED if not missing else Outcome(False, f"missing {missing!r} in {clip(response.text)}")


@register
@dataclass(frozen=True)
class Regex(Assertion):
    """The stripped text matches `pattern` (searched anywhere, or whole when `full`)."""

    type: ClassVar[str] = "regex"
    pattern: str = ""
    full: bool = False
    ignore_case: bool = False

    def validate(self) -> None:
        need_type(self.pattern, str, "pattern", "a string")
        try:
            re.compile(self.pattern)
        except re.error as e:
            raise SpecError("pattern", f"not a valid regular expression: {e}") from None

    def check(self, response: ChatResponse, tools: Any) -> Outcome:
        flags = re.S | (re.I if self.ignore_case else 0)
        text = response.text.strip()
        m = re.fullmatch(self.pattern, text, flags) if self.full else re.search(self.pattern, text, flags)
        return PASSED if m else Outcome(False, f"{clip(response.text)} does not match /{self.pattern}/")


@register
@dataclass(frozen=True)
class NoDegeneration(Assertion):
    """The answer (text and tool calls) is not empty, is not one symbol or word repeated, has no
    U+FFFD, no long run of one character, no looping tail and no word n-gram repeated too often.
    Always a hard failure."""

    type: ClassVar[str] = "no_degeneration"
    allow_empty: bool = False
    min_fill_symbols: int = DegenerationLimits.min_fill_symbols
    min_fill_words: int = DegenerationLimits.min_fill_words
    max_char_run: int = DegenerationLimits.max_char_run
    ngram: int = DegenerationLimits.ngram
    max_ngram_repeats: int = DegenerationLimits.max_ngram_repeats
    max_period: int = DegenerationLimits.max_period
    min_tail_repeats: int = DegenerationLimits.min_tail_repeats
    min_tail_chars: int = DegenerationLimits.min_tail_chars

    def validate(self) -> None:
        need_type(self.allow_empty, bool, "allow_empty", "true or false")
        for f in fields(self):
            if f.name != "allow_empty":
                value = getattr(self, f.name)
                need(isinstance(value, int) and not isinstance(value, bool) and value >= 1, f.name,
                     f"{f.name} must be a positive integer, got {value!r}")

    def check(self, response: ChatResponse, tools: Any) -> Outcome:
        limits = DegenerationLimits(**{f.name: getattr(self, f.name) for f in fields(self)})
        found = find_degeneration(render_answer(response), limits)
        return PASSED if found is None else Outcome(False, f"{DEGENERATE_OUTPUT} ({found.kind}): {found.detail}", hard=True)


@register
@dataclass(frozen=True)
class FinishReason(Assertion):
    """The finish_reason is `value` (or one of a list), e.g. "stop" to prove EOS was honoured."""

    type: ClassVar[str] = "finish_reason"
    value: Any = "stop"

    def validate(self) -> None:
        ok = isinstance(self.value, str) or (isinstance(self.value, list) and all(isinstance(v, str) for v in self.value))
        need(ok, "value", "value must be a finish reason or a list of them")

    def check(self, response: ChatResponse, tools: Any) -> Outcome:
        allowed = [self.value] if isinstance(self.value, str) else list(self.value)
        if response.finish_reason in allowed:
            return PASSED
        return Outcome(False, f"finish_reason {response.finish_reason!r}, expected {' or '.join(map(repr, allowed))}")


@register
@dataclass(frozen=True)
class Length(Assertion):
    """Bounds on the answer: characters of the stripped text, tokens from `usage`."""

    type: ClassVar[str] = "length"
    min_chars: int | None = None
    max_chars: int | None = None
    min_tokens: int | None = None
    max_tokens: int | None = None

    def validate(self) -> None:
        for f in fields(self):
            need_type(getattr(self, f.name), int, f.name, "an integer", optional=True)
            need(getattr(self, f.name) is None or getattr(self, f.name) >= 0, f.name, f"{f.name} must not be negative")
        need(any(getattr(self, f.name) is not None for f in fields(self)), "type", "length needs at least one bound")
        for low, high in (("min_chars", "max_chars"), ("min_tokens", "max_tokens")):
            need(getattr(self, low) is None or getattr(self, high) is None or getattr(self, low) <= getattr(self, high), low,
                 f"{low} must not be above {high} (no answer could pass)")

    def check(self, response: ChatResponse, tools: Any) -> Outcome:
        n = len(response.text.strip())
        if self.min_chars is not None and n < self.min_chars:
            return Outcome(False, f"{n} characters, fewer than {self.min_chars}")
        if self.max_chars is not None and n > self.max_chars:
            return Outcome(False, f"{n} characters, more than {self.max_chars}")
        if self.min_tokens is not None or self.max_tokens is not None:
            t = response.completion_tokens
            if t is None:
                return Outcome(False, "the endpoint reported no completion_tokens (usage), so the token bound cannot be checked")
            if self.min_tokens is not None and t < self.min_tokens:
                return Outcome(False, f"{t} tokens, fewer than {self.min_tokens}")
            if self.max_tokens is not None and t > self.max_tokens:
                return Outcome(False, f"{t} tokens, more than {self.max_tokens}")
        return PASSED


@register
@dataclass(frozen=True)
class Refusal(Assertion):
    """The answer declines (a refusal phrase such as "I can't help with that" and no tool call);
    with `expect: false`, the answer must not be a refusal (over-refusal)."""

    type: ClassVar[str] = "refusal"
    expect: bool = True

    def validate(self) -> None:
        need_type(self.expect, bool, "expect", "true or false")

    def check(self, response: ChatResponse, tools: Any) -> Outcome:
        refused = not response.tool_calls and any(re.search(p, response.text, re.I) for p in REFUSAL_MARKERS)
        if refused == self.expect:
            return PASSED
        what = "a refusal" if self.expect else "an answer, not a refusal"
        return Outcome(False, f"expected {what}, got {clip(response.text)}")


@register
@dataclass(frozen=True)
class EqualsReference(Assertion):
    """The same answer as the reference: stripped text, tool names and decoded arguments."""

    type: ClassVar[str] = "equals_reference"
    relative: ClassVar[bool] = True

    def compare(self, response: ChatResponse, reference: ChatResponse, similar_threshold: float) -> Outcome:
        if answer_key(response) == answer_key(reference):
            return PASSED
        return Outcome(False, f"differs from the reference: {clip(render_answer(response))} vs "
                              f"{clip(render_answer(reference))}")


@register
@dataclass(frozen=True)
class SimilarToReference(Assertion):
    """difflib's ratio between this answer and the reference's is at least `threshold`."""

    type: ClassVar[str] = "similar_to_reference"
    relative: ClassVar[bool] = True
    threshold: float | None = None

    def validate(self) -> None:
        need_type(self.threshold, (int, float), "threshold", "a number in [0, 1]", optional=True)
        need(self.threshold is None or 0.0 <= self.threshold <= 1.0, "threshold", "threshold must be in [0, 1]")

    def compare(self, response: ChatResponse, reference: ChatResponse, similar_threshold: float) -> Outcome:
        threshold = similar_threshold if self.threshold is None else float(self.threshold)
        ratio = similarity(render_answer(response), render_answer(reference))
        if ratio >= threshold:
            return PASSED
        return Outcome(False, f"similarity to the reference {ratio:.3f} < {threshold:.3f}")


def similarity(a: str, b: str) -> float:
    """difflib.SequenceMatcher ratio (1.0 for two empty strings), without the junk heuristic."""
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()
