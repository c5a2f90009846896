"""The value every task family produces."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gatekeeper.endpoints.chat_types import ChatMessage, ToolDefinition


@dataclass(frozen=True)
class Sample:
    """One chat prompt and its correct reply.

    `messages` are OpenAI-style chat messages ending with the turn the assistant answers;
    `tools` are OpenAI-style tool definitions or None; `answer` is the exact assistant text
    (tool calls rendered as `<tool_call>{...}</tool_call>` lines); `meta` holds family-specific
    facts used for scoring and reporting (e.g. a needle's depth, a chat's round count).
    """

    messages: tuple[ChatMessage, ...]
    tools: tuple[ToolDefinition, ...] | None
    answer: str
    family: str
    meta: dict[str, Any] = field(default_factory=dict, compare=False)


def exact(sample: Sample, output_text: str) -> bool:
    """Exact match after trimming surrounding whitespace: the default scorer."""
    return output_text.strip() == sample.answer.strip()
