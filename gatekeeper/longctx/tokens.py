"""Counting chat-prompt tokens and steering prompts to exact lengths.

Counts come from the target's `/tokenize` (vLLM's endpoint: chat messages in, token ids out,
the chat template applied) when a target has one; otherwise they are estimated at about four
characters a token, and every report that uses them says "estimated".

Steering pads a prompt with a unit the tokenizer encodes as exactly one token per repetition
(found by measuring, not assumed), so a prompt can be placed at B·k−1, B·k or B·k+1 tokens.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gatekeeper.client import Endpoint
from gatekeeper.errors import EndpointError

Messages = list[dict[str, Any]]
PAD_UNITS = (" the", " and", " a", " ok", "-", ",", ";", ".")
_PROBE_BASE = "Padding probe: the river and the bridge."
_PROBE_REPS = 7


class TokenCounter:
    """Token counts of chat prompts (generation prompt included) through one endpoint's
    `/tokenize`, falling back to an estimate when it has none or it fails."""

    def __init__(self, endpoint: Endpoint | None) -> None:
        self.endpoint = endpoint
        self.estimated = endpoint is None
        self.why_estimated = "no target exposes /tokenize" if endpoint is None else ""
        self.calls = 0
        self._unit: str | None = None
        self._unit_probed = False

    def count(self, messages: Messages) -> int:
        """Tokens the engine will see for these messages."""
        if self.endpoint is not None:
            try:
                self.calls += 1
                return len(self.endpoint.tokenize(messages=messages))
            except EndpointError as e:
                self.endpoint, self.estimated = None, True
                self.why_estimated = f"/tokenize failed ({e.kind}: {e.detail[:80]})"
        return estimate(messages)

    def pad_unit(self) -> str | None:
        """A string that adds exactly one token per repetition at the end of a message, or None."""
        if not self._unit_probed:
            self._unit_probed = True
            if not self.estimated:
                base = self.count([{"role": "user", "content": _PROBE_BASE}])
                for unit in PAD_UNITS:
                    grown = self.count([{"role": "user", "content": _PROBE_BASE + unit * _PROBE_REPS}])
                    if grown - base == _PROBE_REPS:
                        self._unit = unit
                        break
        return self._unit

    def fit(self, build: Callable[[str], Messages], target: int, tries: int = 4) -> tuple[Messages, int, bool]:
        """Messages of exactly `target` tokens where possible: `build(pad)` must put `pad` at the
        end of some message's text. Returns (messages, count, exact)."""
        unit = self.pad_unit()
        messages = build("")
        n = self.count(messages)
        if unit is None or n > target:
            return messages, n, n == target and not self.estimated
        reps = target - n
        for _ in range(tries):
            messages = build(unit * reps)
            n = self.count(messages)
            if n == target:
                return messages, n, not self.estimated
            reps = max(0, reps + target - n)
        return messages, n, False


def estimate(messages: Messages) -> int:
    """About four characters a token, plus the chat template's few tokens per message."""
    return sum(len(str(m.get("content") or "")) // 4 + 4 for m in messages) + 3
