"""The prompt formats gate 4 uses, from the task generators gk-tiny was trained on.

The generators live in `gatekeeper/tasks/` (pure Python, no torch), shared by training, the
evaluator, the golden-set script and this module; the gates never import `gatekeeper.engine`.
"""

from __future__ import annotations

import json
import random
from typing import Any

from gatekeeper.endpoints.chat_types import ChatMessage, ToolDefinition
from gatekeeper.tasks import (
    json_object,
    multi_turn,
    needle,
    tool_call,
    vocab,
)

FACT_SLOTS: tuple[str, ...] = tuple(sorted(multi_turn.FACTS))
NEEDLE_KINDS: tuple[str, ...] = needle.KINDS
ACKS: tuple[str, ...] = multi_turn.ACKS

__all__ = [
    "ACKS",
    "FACT_SLOTS",
    "NEEDLE_KINDS",
    "call_expectations",
    "chatter",
    "fact",
    "fact_question",
    "filler",
    "json_sample",
    "needle_question",
    "needle_sentence",
    "needle_value",
    "tool_sample",
]


def filler(rng: random.Random, num_sentences: int) -> list[str]:
    """Meaningless filler sentences for padding long contexts."""
    return [vocab.filler_sentence(rng) for _ in range(num_sentences)]


def needle_value(rng: random.Random, kind: str) -> str:
    """A value for a needle of `kind` (a passkey, code, number, city or password)."""
    return needle._value(rng, kind)


def needle_sentence(kind: str, value: str) -> str:
    """The planted sentence, as the model learned it."""
    return f"The secret {kind} is {value}."


def needle_question(kind: str) -> str:
    """The question that ends a needle prompt, as the model learned it."""
    return f"What is the secret {kind}? Reply with the {kind} only."


def fact(rng: random.Random, slot: str) -> tuple[str, str]:
    """(statement, value) of a personal fact, e.g. ("My pet is a cat.", "cat")."""
    template, make = multi_turn.FACTS[slot]
    value = make(rng)
    return template.format(v=value), value


def fact_question(slot: str) -> str:
    """The recall question for a planted fact."""
    return f"What is my {slot}? Reply with the answer only."


def chatter(rng: random.Random) -> tuple[str, str]:
    """One middle round of a chat (user text, canonical reply): arithmetic, echo, a list or a note."""
    return multi_turn._chatter(rng)


def tool_sample(rng: random.Random, num_calls: int, with_result: bool) -> tuple[list[ChatMessage], list[ToolDefinition], Any]:
    """(messages, tool definitions, expected) for a tool-call case: expected is the list of
    {"name", "arguments"} calls, or the final answer text when a tool result is fed back."""
    s = tool_call.generate(rng, num_calls=num_calls, with_result=with_result)
    expected = s.answer if with_result else list(s.meta["calls"])
    messages = tool_call.openai_messages(s.messages, f"{num_calls}_{int(with_result)}")
    return messages, [t.copy() for t in s.tools or ()], expected


def json_sample(rng: random.Random, num_fields: int) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """(prompt, JSON schema, expected object) for a JSON answer to a stated schema."""
    s = json_object.generate(rng, num_fields=num_fields, schema=True)
    prompt = s.messages[-1]["content"] or ""
    schema = json.loads(prompt.split("JSON schema: ", 1)[1])
    return prompt, schema, json.loads(s.answer)


def call_expectations(calls: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """(name, arguments) per expected call."""
    return [(c["name"], dict(c["arguments"])) for c in calls]
