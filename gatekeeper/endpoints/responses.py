"""What the endpoint client returns: parsed, typed responses of OpenAI-compatible servers."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ToolCall:
    """One function call from a chat response. `arguments` is the raw JSON string as sent;
    `parsed` is its decoded object, or None when it is not valid JSON."""

    name: str
    arguments: str
    id: str | None = None

    @property
    def parsed(self) -> Any:
        """The decoded arguments, or None if they are not valid JSON."""
        try:
            return json.loads(self.arguments)
        except (TypeError, ValueError):
            return None


@dataclass(frozen=True)
class TokenLogprob:
    """A generated (or scored) token's logprob and the top alternatives {token: logprob}."""

    token: str
    logprob: float | None
    top: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class ChatResponse:
    """A chat completion, streamed or not, normalised.

    `protocol_warnings` lists deviations the client tolerated (stream without `data: [DONE]`,
    logprobs in another shape, a missing field) so that a gate can report them as WARN.
    """

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    logprobs: tuple[TokenLogprob, ...] | None = None
    e2e_s: float = 0.0
    ttft_s: float | None = None
    streamed: bool = False
    protocol_warnings: tuple[str, ...] = ()
    raw: dict[str, Any] | None = None
    model: str | None = None  # the model the answer names
    retries: int = 0  # times the server answered 502/503/504 and the client sent it again before this answer


@dataclass(frozen=True)
class CompletionResponse:
    """A text completion. With echo, `tokens`/`logprobs` cover the prompt then the output;
    `prompt_logprobs` is vLLM's per-position list when requested (None if not returned)."""

    text: str
    finish_reason: str | None = None
    tokens: tuple[str, ...] = ()
    token_logprobs: tuple[float | None, ...] = ()
    top_logprobs: tuple[dict[str, float] | None, ...] = ()
    prompt_logprobs: tuple[dict[str, Any] | None, ...] | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    e2e_s: float = 0.0
    ttft_s: float | None = None
    protocol_warnings: tuple[str, ...] = ()
    raw: dict[str, Any] | None = None
    model: str | None = None  # the model the answer names
    retries: int = 0  # times the server answered 502/503/504 and the client sent it again before this answer
