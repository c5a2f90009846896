"""Request bodies of the OpenAI-compatible API (pydantic), validated once at the HTTP edge.

Field names and defaults follow vLLM's protocol files (see vllm-notes §3). Unknown fields are
ignored, as OpenAI's servers do; fields the engine cannot honour with a non-default value
(penalties, logit bias, n > 1) are refused with a 400 rather than silently dropped.
`response_format` and vLLM's `structured_outputs` are enforced by the grammar backend
(`server/structured.py`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, model_validator

from gatekeeper.engine.sampling_params import MAX_LOGPROBS, SamplingParams
from gatekeeper.engine.server.errors import ApiError


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
SAMPLING_EPS = 1e-5
"""Temperatures below this are greedy, as in vLLM (dividing logits by 1e-300 overflows)."""


class _Body(BaseModel):
    # NaN/Infinity are accepted by Python's JSON parser; a NaN temperature must be a 400, not a
    # poisoned sampler
    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)


class StreamOptions(_Body):
    include_usage: bool = True
    continuous_usage_stats: bool = False


class _SamplingRequest(_Body):
    """Fields shared by chat and completions requests."""

    model: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    seed: int | None = Field(default=None, ge=_INT64_MIN, le=_INT64_MAX)
    min_tokens: int = 0
    stop: str | list[str] | None = None
    stop_token_ids: list[StrictInt] | None = None
    ignore_eos: bool = False
    skip_special_tokens: bool = True
    n: int = 1
    stream: bool = False
    stream_options: StreamOptions | None = None
    prompt_logprobs: int | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    repetition_penalty: float | None = None
    logit_bias: dict[str, float] | None = None
    user: str | None = None
    response_format: dict | None = None
    structured_outputs: dict | None = None  # vLLM's extension: json, json_object, regex, choice, grammar

    @model_validator(mode="after")
    def _check_sampling(self):
        if self.temperature is not None and self.temperature < 0:
            raise ValueError("temperature must be non-negative")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise ValueError("top_p must be in (0, 1]")
        if self.top_k is not None and self.top_k < -1:
            raise ValueError("top_k must be -1 (disable) or at least 1")
        if self.min_tokens < 0:
            raise ValueError("min_tokens must be non-negative")
        if self.n != 1:
            raise ValueError("n must be 1 (the bundled engine returns one choice per prompt)")
        if self.stream_options is not None and not self.stream:
            raise ValueError("stream_options can only be set when stream is true")
        if self.prompt_logprobs is not None:
            if self.stream:
                raise ValueError("prompt_logprobs is not supported with stream")
            if not 0 <= self.prompt_logprobs <= MAX_LOGPROBS:
                raise ValueError(f"prompt_logprobs must be between 0 and {MAX_LOGPROBS}")
        if any(t < 0 for t in self.stop_token_ids or ()):
            raise ValueError("stop_token_ids must be non-negative")
        for name in ("frequency_penalty", "presence_penalty"):
            if getattr(self, name) not in (None, 0, 0.0):
                raise ValueError(f"{name} is not supported by the bundled engine (send 0 or omit it)")
        if self.repetition_penalty not in (None, 1, 1.0):
            raise ValueError("repetition_penalty is not supported by the bundled engine (send 1 or omit it)")
        if self.logit_bias:
            raise ValueError("logit_bias is not supported by the bundled engine")
        return self

    @property
    def stop_list(self) -> tuple[str, ...]:
        """`stop` as a tuple of non-empty strings."""
        stops = [self.stop] if isinstance(self.stop, str) else self.stop or []
        return tuple(s for s in stops if s)

    def sampling_params(self, max_tokens: int, logprobs: int | None, prompt_logprobs: int | None) -> SamplingParams:
        """The engine's parameters; temperature defaults to 1.0 when absent, as in vLLM."""
        top_k = self.top_k if self.top_k is not None and self.top_k > 0 else 0
        temperature = 1.0 if self.temperature is None else self.temperature
        temperature = 0.0 if temperature < SAMPLING_EPS else temperature
        if self.min_tokens > max_tokens:
            raise ApiError(f"min_tokens ({self.min_tokens}) must not exceed max_tokens ({max_tokens})", param="min_tokens")
        return SamplingParams(
            temperature=temperature,
            top_p=1.0 if self.top_p is None else self.top_p,
            top_k=top_k,
            seed=self.seed,
            max_tokens=max_tokens,
            min_tokens=self.min_tokens,
            stop=self.stop_list,
            stop_token_ids=tuple(self.stop_token_ids or ()),
            ignore_eos=self.ignore_eos,
            logprobs=logprobs,
            prompt_logprobs=prompt_logprobs,
            skip_special_tokens=self.skip_special_tokens,
        )


class TextPart(_Body):
    type: Literal["text"]
    text: str


class FunctionCall(_Body):
    name: str
    arguments: str


class ToolCallIn(_Body):
    id: str | None = None
    type: Literal["function"] = "function"
    function: FunctionCall


class ChatMessage(_Body):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[TextPart] | None = None
    name: str | None = None
    tool_calls: list[ToolCallIn] | None = None
    tool_call_id: str | None = None

    def text(self) -> str:
        """The content as one string (text parts joined)."""
        if isinstance(self.content, list):
            return "".join(p.text for p in self.content)
        return self.content or ""

    def template_dict(self) -> dict:
        """The message as the chat template sees it (developer is treated as system)."""
        out: dict = {"role": "system" if self.role == "developer" else self.role, "content": self.text()}
        if self.tool_calls:
            out["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.function.name, "arguments": c.function.arguments}}
                for c in self.tool_calls
            ]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        return out


class FunctionDef(_Body):
    name: str = Field(min_length=1)
    description: str | None = None
    parameters: dict | None = None
    strict: bool | None = None


class ToolDef(_Body):
    type: Literal["function"] = "function"
    function: FunctionDef


class _NamedFunction(_Body):
    name: str


class NamedToolChoice(_Body):
    type: Literal["function"] = "function"
    function: _NamedFunction


class ChatCompletionRequest(_SamplingRequest):
    messages: list[ChatMessage] = Field(min_length=1)
    max_completion_tokens: int | None = None
    logprobs: bool = False
    top_logprobs: int | None = None
    tools: list[ToolDef] | None = None
    tool_choice: Literal["none", "auto", "required"] | NamedToolChoice | None = None
    parallel_tool_calls: bool = True
    add_generation_prompt: bool = True

    @model_validator(mode="after")
    def _check_chat(self):
        if self.top_logprobs is not None:
            if not 0 <= self.top_logprobs <= MAX_LOGPROBS:
                raise ValueError(f"top_logprobs must be between 0 and {MAX_LOGPROBS}")
            if self.top_logprobs > 0 and not self.logprobs:
                raise ValueError("top_logprobs requires logprobs to be true")
        limit = self.requested_max_tokens
        if limit is not None and limit < 1:
            raise ValueError("max_tokens / max_completion_tokens must be at least 1")
        choice = self.tool_choice
        if choice is not None and choice != "none" and not self.tools:
            raise ValueError("tool_choice needs tools")
        if isinstance(choice, NamedToolChoice) and choice.function.name not in {t.function.name for t in self.tools or ()}:
            raise ValueError(f"tool_choice names {choice.function.name!r}, which is not in tools")
        return self

    @property
    def requested_max_tokens(self) -> int | None:
        """max_completion_tokens, or the deprecated max_tokens."""
        return self.max_completion_tokens if self.max_completion_tokens is not None else self.max_tokens

    @property
    def effective_tool_choice(self) -> str | NamedToolChoice:
        """"none" without tools; "auto" when tools come without a tool_choice (OpenAI's rule)."""
        if not self.tools:
            return "none"
        return self.tool_choice if self.tool_choice is not None else "auto"


Prompt = str | list[StrictInt] | list[list[StrictInt]] | list[str]


class CompletionRequest(_SamplingRequest):
    prompt: Prompt
    max_tokens: int | None = 16
    echo: bool = False
    logprobs: int | None = None
    suffix: str | None = None
    add_special_tokens: bool = True

    @model_validator(mode="after")
    def _check_completion(self):
        if self.logprobs is not None and not 0 <= self.logprobs <= MAX_LOGPROBS:
            raise ValueError(f"logprobs must be between 0 and {MAX_LOGPROBS}")
        if self.max_tokens is not None and (self.max_tokens < 0 or (self.max_tokens == 0 and not self.echo)):
            raise ValueError("max_tokens must be at least 1 (0 is allowed only with echo)")
        if self.suffix:
            raise ValueError("suffix is not supported")
        if isinstance(self.prompt, list) and (not self.prompt or any(p in ("", []) for p in self.prompt)):
            raise ValueError("prompt must not be empty")
        if self.prompt == "":
            raise ValueError("prompt must not be empty")
        return self


class TokenizeRequest(_Body):
    model: str | None = None
    prompt: str | None = None
    messages: list[ChatMessage] | None = None
    tools: list[ToolDef] | None = None
    add_special_tokens: bool = True
    add_generation_prompt: bool = True

    @model_validator(mode="after")
    def _check_one(self):
        if (self.prompt is None) == (self.messages is None):
            raise ValueError("send exactly one of prompt or messages")
        return self


class DetokenizeRequest(_Body):
    model: str | None = None
    tokens: list[StrictInt]
