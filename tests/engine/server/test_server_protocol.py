"""Request validation at the HTTP edge (pydantic models), without a server."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gatekeeper.engine.server.errors import ApiError
from gatekeeper.engine.server.protocol import ChatCompletionRequest, CompletionRequest, TokenizeRequest

USER = [{"role": "user", "content": "hi"}]
TOOL = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}


def chat(**kw) -> ChatCompletionRequest:
    return ChatCompletionRequest.model_validate({"messages": USER, **kw})


@pytest.mark.parametrize("kw, fragment", [
    ({"top_logprobs": 3}, "requires logprobs"),
    ({"logprobs": True, "top_logprobs": 21}, "between 0 and 20"),
    ({"max_tokens": -1}, "at least 1"),
    ({"max_completion_tokens": 0}, "at least 1"),
    ({"n": 2}, "n must be 1"),
    ({"temperature": -0.5}, "non-negative"),
    ({"top_p": 0}, "top_p"),
    ({"stream_options": {"include_usage": True}}, "stream_options"),
    ({"stream": True, "prompt_logprobs": 1}, "prompt_logprobs"),
    ({"tool_choice": "required"}, "needs tools"),
    ({"tools": [TOOL], "tool_choice": {"type": "function", "function": {"name": "other"}}}, "not in tools"),
    ({"frequency_penalty": 0.5}, "not supported"),
    ({"logit_bias": {"1": 2.0}}, "not supported"),
    ({"stop_token_ids": [-1]}, "non-negative"),
])
def test_chat_rejects(kw, fragment):
    with pytest.raises(ValidationError, match=fragment):
        chat(**kw)


@pytest.mark.parametrize("messages", [
    [],
    [{"role": "wizard", "content": "x"}],
    [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}],
    [{"role": "user", "content": 5}],
    "hello",
])
def test_chat_rejects_bad_messages(messages):
    with pytest.raises(ValidationError):
        ChatCompletionRequest.model_validate({"messages": messages})


def test_chat_unknown_fields_are_ignored():
    assert chat(frobnicate=True, metadata={"a": 1}).messages[0].text() == "hi"


def test_content_parts_join_and_developer_is_system():
    req = ChatCompletionRequest.model_validate({"messages": [
        {"role": "developer", "content": [{"type": "text", "text": "be "}, {"type": "text", "text": "brief"}]},
        {"role": "user", "content": "hi"}]})
    assert req.messages[0].template_dict() == {"role": "system", "content": "be brief"}


def test_tool_choice_defaults():
    assert chat().effective_tool_choice == "none"
    assert chat(tools=[TOOL]).effective_tool_choice == "auto"
    assert chat(tools=[TOOL], tool_choice="none").effective_tool_choice == "none"


def test_sampling_defaults_follow_vllm():
    p = chat().sampling_params(max_tokens=8, logprobs=None, prompt_logprobs=None)
    assert (p.temperature, p.top_p, p.top_k, p.max_tokens) == (1.0, 1.0, 0, 8)
    p = chat(temperature=0, top_k=-1, stop="END", stop_token_ids=[3], seed=5, min_tokens=2, ignore_eos=True) \
        .sampling_params(max_tokens=8, logprobs=2, prompt_logprobs=1)
    assert (p.temperature, p.top_k, p.stop, p.stop_token_ids, p.seed, p.min_tokens, p.ignore_eos, p.logprobs,
            p.prompt_logprobs) == (0.0, 0, ("END",), (3,), 5, 2, True, 2, 1)


def test_max_completion_tokens_wins_over_max_tokens():
    assert chat(max_tokens=5, max_completion_tokens=7).requested_max_tokens == 7


def test_min_tokens_over_budget_is_an_api_error():
    with pytest.raises(ApiError, match="min_tokens"):
        chat(min_tokens=10).sampling_params(max_tokens=4, logprobs=None, prompt_logprobs=None)


@pytest.mark.parametrize("prompt", ["text", ["a", "b"], [1, 2, 3], [[1, 2], [3]]])
def test_completion_prompt_shapes(prompt):
    assert CompletionRequest.model_validate({"prompt": prompt}).prompt == prompt


@pytest.mark.parametrize("body, fragment", [
    ({"prompt": ""}, "empty"),
    ({"prompt": []}, "empty"),
    ({"prompt": [[]]}, "empty"),
    ({"prompt": "x", "max_tokens": 0}, "only with echo"),
    ({"prompt": "x", "max_tokens": -3}, "at least 1"),
    ({"prompt": "x", "logprobs": 21}, "between 0 and 20"),
    ({"prompt": "x", "prompt_logprobs": -1}, "between 0 and 20"),
    ({"prompt": "x", "suffix": "y"}, "suffix"),
    ({"prompt": [1.5, 2]}, "prompt"),
    ({"prompt": {"text": "x"}}, "prompt"),
])
def test_completion_rejects(body, fragment):
    with pytest.raises(ValidationError, match=fragment):
        CompletionRequest.model_validate(body)


def test_completion_echo_allows_zero_tokens():
    assert CompletionRequest.model_validate({"prompt": "x", "echo": True, "max_tokens": 0}).max_tokens == 0


def test_tokenize_needs_exactly_one_input():
    with pytest.raises(ValidationError, match="exactly one"):
        TokenizeRequest.model_validate({})
    with pytest.raises(ValidationError, match="exactly one"):
        TokenizeRequest.model_validate({"prompt": "x", "messages": USER})
