"""The "same tokens, rendered differently" half of the one rule for two differing answers asked
again (gatekeeper/stats/near_tie.py): forgiven only when both answers are renderings of one generation."""

from __future__ import annotations

from gatekeeper.stats.near_tie import asked_again, drawn_from_tokens, same_tokens
from gatekeeper.endpoints.responses import ChatResponse, TokenLogprob, ToolCall

TOKENS = ["<tool_call>", '\n{"', "name", '":', ' "', "get", "_weather", '",', ' "', "arguments", '":', ' {"',
          "city", '":', ' "', "Par", "is", '"}}', "\n</tool_call>"]


def _answer(text: str, calls: tuple[ToolCall, ...] = ()) -> ChatResponse:
    return ChatResponse(text=text, tool_calls=calls, finish_reason="stop", logprobs=tuple(TokenLogprob(t, -0.1, {t: -0.1}) for t in TOKENS))


def test_a_parser_that_keeps_the_call_as_text_renders_the_same_generation():
    parsed = _answer("", (ToolCall("get_weather", '{"city":"Paris"}'),))
    kept = _answer("".join(TOKENS))
    assert drawn_from_tokens(parsed) and drawn_from_tokens(kept)
    assert same_tokens(parsed, kept) and asked_again(parsed, kept, 1.0, repeated=True) == "same tokens"


def test_a_parser_that_lifts_a_call_out_of_the_middle_leaves_text_drawn_from_the_tokens():
    """vLLM's Hermes parser on two calls, the first malformed: it extracts the second and keeps the
    rest as text, so the text is the generation with a piece cut out (and special tokens skipped)."""
    tokens = ['<tool_call>{"name": "a", "arguments": {"x": 1@}}</tool_call>\n', '<tool_call>{"name": "b", "arguments": '
              '{"y": 2}}</tool_call>\n', "<|im_end|>", '<tool_call>{"name": "c"']
    answer = ChatResponse(text='<tool_call>{"name": "a", "arguments": {"x": 1@}}</tool_call>\n<tool_call>{"name": "c"',
                          tool_calls=(ToolCall("b", '{"y": 2}'),), finish_reason="stop",
                          logprobs=tuple(TokenLogprob(t, -0.1, {t: -0.1}) for t in tokens))
    assert drawn_from_tokens(answer)


def test_text_or_arguments_the_tokens_do_not_contain_are_not_a_rendering():
    reference = _answer("", (ToolCall("get_weather", '{"city": "Paris"}'),))
    changed_args = _answer("", (ToolCall("get_weather", '{"city": "Paris", "note": "changed"}'),))
    reworded = _answer("".join(TOKENS) + " (reworded)")
    for candidate in (changed_args, reworded):
        assert not drawn_from_tokens(candidate)
        assert not same_tokens(reference, candidate) and asked_again(reference, candidate, 1.0, repeated=True) is None


def test_other_tokens_are_never_the_same_generation():
    other = ChatResponse(text="Paris", tool_calls=(), finish_reason="stop", logprobs=(TokenLogprob("Paris", -0.1, {"Paris": -0.1}),))
    assert not same_tokens(_answer("".join(TOKENS)), other)
