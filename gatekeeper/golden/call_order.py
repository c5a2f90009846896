"""Parallel tool calls shown in one order on both sides of a side-by-side text.

A server may answer with the same parallel calls as the reference in another order (reference
`get_weather(Paris)` then `get_time(Paris)`, candidate the two swapped). The report's text pair
marks everything from the first differing character, so such a swap would read as total
disagreement. Where both sides made more than one call, each side's calls are shown sorted by
name, then by the canonical JSON of their decoded arguments (keys sorted; arguments that are not
JSON sort after, by their raw text), and a last line, `CANONICAL_NOTE`, says so when that changed
either side's order: a pure swap then shows no difference at all.

Display only. How a gate judges a swap is its own rule, not changed here (the tool matcher,
`tool_match.py`, pairs parallel calls in any order; comparisons of two answers' keys do not).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TypeVar

CANONICAL_NOTE = "(parallel calls shown in canonical order)"

T = TypeVar("T")


def order_key(name: str, arguments: str) -> tuple[str, int, str]:
    """Where a call sorts: by name, then by its decoded arguments as canonical JSON (non-JSON last)."""
    try:
        return name, 0, json.dumps(json.loads(arguments), sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        return name, 1, arguments


def in_canonical_order(reference: Sequence[T], candidate: Sequence[T],
                       name_args: Callable[[T], tuple[str, str]]) -> tuple[list[T], list[T], bool]:
    """Both sides' calls in the order to show them, and whether that reorders either side.
    `name_args` gives a call's name and raw arguments. Kept as they are unless both sides made
    more than one call (a lone call has no order to compare)."""
    if len(reference) < 2 or len(candidate) < 2:
        return list(reference), list(candidate), False

    def by_key(call: T) -> tuple[str, int, str]:
        return order_key(*name_args(call))

    ref, cand = sorted(reference, key=by_key), sorted(candidate, key=by_key)
    return ref, cand, ref != list(reference) or cand != list(candidate)
