"""POST /v1/chat/completions: render the conversation, generate, parse Hermes tool calls.

Tool choice `required` and a named function are enforced by a grammar (`server/structured.py`):
the output is one or more `<tool_call>{"name": …, "arguments": …}</tool_call>` blocks whose
arguments match the tool's schema, and nothing else, so such an answer has no content (a block
that `max_tokens` cut short is dropped, not shown as text); `response_format` constrains the
content. Finish
reasons follow vLLM after PR #25054: "tool_calls" when `auto`/`required` produced calls, "stop"
for a named function; `required` with nothing parsed keeps the engine's reason, not an empty
`tool_calls` (vLLM issue #53255).
"""

from __future__ import annotations

import time
from contextlib import aclosing
from dataclasses import dataclass, replace
from typing import Any
from collections.abc import AsyncIterator

from gatekeeper.engine.outputs import RequestOutput
from gatekeeper.engine.sampling_params import SamplingParams
from gatekeeper.engine.server import sse
from gatekeeper.engine.server.protocol import ChatCompletionRequest, NamedToolChoice
from gatekeeper.engine.server.serving import Serving, random_id, usage
from gatekeeper.engine.server.structured import constraint
from gatekeeper.engine.server.tool_parser import (
    ContentDelta, Delta, ToolCall, ToolCallDelta, make_streaming_parser, parse_tool_calls,
)


@dataclass(frozen=True)
class ChatPlan:
    """A validated chat request turned into engine input."""

    prompt_ids: list[int]
    params: SamplingParams
    tool_choice: str | NamedToolChoice
    top_n: int | None  # logprobs per token reported to the client (None: logprobs off)
    max_calls: int | None  # 1 when parallel_tool_calls is false (vLLM keeps the first call)

    @property
    def calls_only(self) -> bool:
        """The grammar allows tool calls and nothing else (required or named tool choice)."""
        return self.params.grammar is not None and (self.tool_choice == "required" or isinstance(self.tool_choice, NamedToolChoice))

    @property
    def parses_tools(self) -> bool:
        return self.tool_choice != "none"


def finish_reason(choice: str | NamedToolChoice, calls: list[ToolCall], engine_reason: str | None) -> str:
    """The choice's finish_reason under vLLM's post-#25054 rules."""
    if isinstance(choice, NamedToolChoice):
        return "length" if engine_reason == "length" else "stop"
    if choice in ("auto", "required") and calls:
        return "tool_calls"
    return engine_reason or "stop"


class ChatServing:
    """Chat completions over one engine."""

    def __init__(self, serving: Serving) -> None:
        self.s = serving

    def plan(self, req: ChatCompletionRequest) -> ChatPlan:
        """Validate against the model and build the prompt and sampling parameters."""
        s = self.s
        s.check_model(req.model)
        choice = req.effective_tool_choice
        tools = [t.model_dump(exclude_none=True) for t in req.tools] if req.tools else None
        limit = s.engine.faults.value("tool-overflow") if "tool-overflow" in s.engine.faults else None
        if tools and limit is not None and len(tools) > limit:
            tools = tools[: int(limit)]  # the fault: the tools beyond the limit never reach the prompt
        prompt = s.tokenizer.apply_chat_template(
            [m.template_dict() for m in req.messages], tools=tools, add_generation_prompt=req.add_generation_prompt)
        named = choice.function.name if isinstance(choice, NamedToolChoice) else choice
        grammar = constraint(s.engine.core.grammars, req.response_format, req.structured_outputs, tools, named,
                             req.parallel_tool_calls)
        prompt_ids = s.tokenizer.encode(prompt)
        max_tokens = s.max_tokens(len(prompt_ids), req.requested_max_tokens)
        top_n = s.logprob_count((req.top_logprobs or 0) if req.logprobs else None)
        params = replace(req.sampling_params(max_tokens, top_n, s.logprob_count(req.prompt_logprobs)), grammar=grammar)
        return ChatPlan(prompt_ids, params, choice, top_n, None if req.parallel_tool_calls else 1)

    async def create(self, req: ChatCompletionRequest) -> dict[str, Any] | AsyncIterator[str]:
        """The response body, or an SSE stream when `stream` is set."""
        plan = self.plan(req)
        request_id = random_id("chatcmpl")
        if req.stream:
            outputs = await self.s.stream(request_id, plan.prompt_ids, plan.params)
            return self._stream(req, plan, request_id, outputs)
        got = await self.s.collect(request_id, plan.prompt_ids, plan.params)
        if plan.parses_tools:
            content, calls = parse_tool_calls(got.text)
            content = "" if content is None and not calls else content  # no calls: the text, even if empty
            content = None if plan.calls_only else content
            calls = calls[: plan.max_calls]
        else:
            content, calls = got.text, []
        message = {
            "role": "assistant",
            "content": content,
            "tool_calls": [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in calls
            ],
        }
        logprobs = None
        if plan.top_n is not None and got.logprobs is not None:
            logprobs = {"content": [self.s.chat_logprob(lp, plan.top_n) for lp in got.logprobs]}
        return {
            "id": request_id,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.s.model_name,
            "choices": [{
                "index": 0,
                "message": message,
                "logprobs": logprobs,
                "finish_reason": finish_reason(plan.tool_choice, calls, got.finish_reason),
                "stop_reason": got.stop_reason,
            }],
            "usage": usage(len(plan.prompt_ids), len(got.token_ids), got.num_cached_tokens),
            "prompt_logprobs": self.s.prompt_logprobs_dict(got.prompt_logprobs),
            "system_fingerprint": None,
        }

    async def _stream(
        self, req: ChatCompletionRequest, plan: ChatPlan, request_id: str, outputs: AsyncIterator[RequestOutput]
    ) -> AsyncIterator[str]:
        created = int(time.time())
        opts = req.stream_options
        include_usage = opts is not None and opts.include_usage
        continuous = opts is not None and opts.continuous_usage_stats
        parser = make_streaming_parser("tool-parser-partial" in self.s.engine.faults) if plan.parses_tools else None
        pending: list[dict] = []  # logprob entries not yet attached to a chunk
        num_generated, num_cached = 0, 0

        def chunk(delta: dict, finish: str | None = None, stop_reason: Any = None) -> str:
            nonlocal pending
            logprobs = {"content": pending} if plan.top_n is not None and pending else None
            pending = []
            body: dict[str, Any] = {
                "id": request_id, "object": "chat.completion.chunk", "created": created, "model": self.s.model_name,
                "choices": [{"index": 0, "delta": delta, "logprobs": logprobs, "finish_reason": finish,
                             "stop_reason": stop_reason}],
            }
            if continuous:
                body["usage"] = usage(len(plan.prompt_ids), num_generated, num_cached)
            return sse.event(body)

        async with aclosing(outputs):
            yield chunk({"role": "assistant", "content": ""})
            deltas: list[Delta] = []
            async for out in outputs:
                num_generated += len(out.new_token_ids)
                num_cached = max(num_cached, out.num_cached_tokens)
                if plan.top_n is not None and out.new_logprobs:
                    pending += [self.s.chat_logprob(lp, plan.top_n) for lp in out.new_logprobs]
                if parser is None:
                    deltas += [ContentDelta(out.new_text)] if out.new_text else []
                else:
                    deltas += parser.feed(out.new_text) + (parser.finish() if out.finished else [])
                for d in deltas:
                    if isinstance(d, ToolCallDelta) and plan.max_calls is not None and d.index >= plan.max_calls:
                        continue
                    if isinstance(d, ContentDelta) and plan.calls_only:
                        continue
                    yield chunk(_delta_json(d))
                deltas = []
                if out.finished:
                    calls = (parser.calls if parser else [])[: plan.max_calls]
                    yield chunk({}, finish_reason(plan.tool_choice, calls, out.finish_reason), out.stop_reason)
        if include_usage:
            yield sse.event({
                "id": request_id, "object": "chat.completion.chunk", "created": created, "model": self.s.model_name,
                "choices": [], "usage": usage(len(plan.prompt_ids), num_generated, num_cached),
            })
        yield sse.DONE


def _delta_json(d: Delta) -> dict[str, Any]:
    if isinstance(d, ContentDelta):
        return {"content": d.text}
    assert isinstance(d, ToolCallDelta)
    if d.name is not None:
        call = {"index": d.index, "id": d.id, "type": "function", "function": {"name": d.name}}
    else:
        call = {"index": d.index, "function": {"arguments": d.arguments}}
    return {"tool_calls": [call]}
