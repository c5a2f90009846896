"""The OpenAI chat shapes gatekeeper builds and sends: a message, a tool call, a tool definition.

These are the request side of `/v1/chat/completions` as the task families, golden sets and gates
write it, and as `Endpoint.chat` sends it (the answers come back as `responses.ChatResponse`).
They are TypedDicts, not dataclasses, because they *are* the JSON: a message is put into a request
body as it is, and a recording keys requests by that JSON.

A user's recorded traffic is not retyped here: its requests stay raw JSON (`traffic/format.py`)
and are replayed as recorded, content parts and all.
"""

from __future__ import annotations

from typing import Any, Required, TypedDict

from gatekeeper.json_types import JsonObject


class FunctionCall(TypedDict):
    """The function a tool call names, and its arguments: JSON text on the wire; a task's own
    messages hold the object itself (`tasks.tool_call.openai_messages` writes it as text)."""

    name: str
    arguments: str | JsonObject


class ToolCall(TypedDict, total=False):
    """One call in an assistant message's `tool_calls`: `type` "function" and the `function`
    called; `id` is what the tool message answering it names (a task's own calls have none until
    `openai_messages` gives them one)."""

    id: str
    type: Required[str]
    function: Required[FunctionCall]


class ChatMessage(TypedDict, total=False):
    """One chat message. `role` is system, user, assistant or tool; `content` its text (None or
    absent on an assistant turn that only calls tools); `tool_calls` an assistant's calls;
    `tool_call_id` the call a tool message answers; `name` an optional speaker name."""

    role: Required[str]
    content: str | None
    tool_calls: list[ToolCall]
    tool_call_id: str
    name: str


class FunctionDefinition(TypedDict, total=False):
    """A callable function offered to the model: its name, what it does, and its `parameters`, a
    JSON Schema object as the golden set or task wrote it (read by `golden/tool_match.py`)."""

    name: Required[str]
    description: str
    parameters: dict[str, Any]


class ToolDefinition(TypedDict):
    """One entry of a request's `tools`: `type` "function" and its definition."""

    type: str
    function: FunctionDefinition
