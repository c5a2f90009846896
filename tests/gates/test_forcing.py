"""Forcing the reference's answer on both targets tells a needle lost to a close call from one lost
to a regression (`gatekeeper/gates/forcing.py`): judged position by position as any
divergence is, on real servers."""

from __future__ import annotations

import random

import pytest

from gatekeeper.endpoints.client import Endpoint
from gatekeeper.endpoints.responses import ChatResponse, TokenLogprob
from gatekeeper.gates.forcing import Forced, force, generated
from gatekeeper.gates.longctx import tasks
from gatekeeper.gates.longctx.prompts import needle_prompts
from gatekeeper.gates.longctx.history import history
from gatekeeper.gates.longctx.tokens import TokenCounter
from gatekeeper.stats.near_tie import judge

from paths import ROOT
from server_util import running_server

GK_TINY = ROOT / "gatekeeper" / "models" / "gk-tiny"


def _pos(token: str, top: dict[str, float]) -> TokenLogprob:
    return TokenLogprob(token, top[token], top)


def test_a_forced_answer_follows_only_when_every_parting_is_a_near_tie():
    close = judge(3, _pos("4", {"4": -0.6, "7": -0.9}), _pos("7", {"7": -0.7, "4": -0.8}), 1.0)
    far = judge(5, _pos("2", {"2": -0.1, "9": -3.5}), _pos("9", {"9": -0.2, "2": -4.0}), 1.0)
    assert close.tie and not far.tie
    assert Forced(positions=6, partings=()).follows
    flip = Forced(positions=6, partings=(close,))
    assert flip.follows and flip.departure() is None and "each a near tie" in flip.describe()
    left = Forced(positions=6, partings=(close, far))
    assert not left.follows and left.departure() is far and "confidently leaves it" in left.describe()


def test_the_generated_answer_is_spelled_by_its_logprob_tokens_without_the_stop_token():
    tokens = tuple(_pos(t, {t: -0.1}) for t in ("<tool_call>", "{\"name\"", ": 1}", "</tool_call>", "<|im_end|>"))
    stopped = ChatResponse(text="", logprobs=tokens, finish_reason="stop")
    assert generated(stopped) == '<tool_call>{"name": 1}</tool_call>'
    cut = ChatResponse(text="", logprobs=tokens[:3], finish_reason="length")
    assert generated(cut) == '<tool_call>{"name": 1}'
    assert generated(ChatResponse(text="x", finish_reason="stop")) is None


@pytest.fixture(scope="module")
def three():
    """The reference, an identical build, and one whose rotary positions drift at long contexts."""
    with (running_server(GK_TINY, "--profile", "optimized") as a, running_server(GK_TINY, "--profile", "optimized") as b,
          running_server(GK_TINY, "--profile", "optimized", "--fault", "rope-drift") as c):
        yield tuple(Endpoint(role, s.url, "gk-tiny") for role, s in (("reference", a), ("candidate", b), ("candidate", c)))


@pytest.mark.slow  # ~40 s: three servers
def test_a_twin_follows_the_forced_answer_and_a_rope_drift_build_leaves_it(three):
    """The reference's greedy answer to a long needle prompt, forced: an identical build chooses
    the reference's token at every position; a build whose rotary positions drift at long
    contexts (the prefill path sees it too) confidently leaves the answer."""
    ref, twin, drift = three
    prompt = needle_prompts(TokenCounter(ref), random.Random("forced"), 1900, [0.5])[0]
    answer = ref.chat(prompt.messages, max_tokens=16, temperature=0.0).text
    assert answer, "the reference answered nothing"
    same = force(ref, twin, prompt.messages, answer, k=5, gap=0.05, drift=0.01)
    assert isinstance(same, Forced), same
    assert same.positions >= 2 and same.partings == () and same.follows
    left = force(ref, drift, prompt.messages, answer, k=5, gap=0.05, drift=0.01)
    assert isinstance(left, Forced), left
    assert not left.follows and left.departure() is not None, left.describe()


@pytest.mark.slow  # shares the three servers above
def test_a_tool_case_is_forced_with_its_tools_rendered_and_its_call_markup_kept(three):
    """A tool case after a long chat, as gate 4 asks it: the reference's answer is what its model
    generated (the tool-call markup the server parsed away included), the prompt rendered with the
    case's tools by each target's /tokenize. The prompt and answer are the tokens the chat request
    used (same counts as its usage and logprobs); an identical build follows it at every position,
    a rope-drift build confidently leaves it."""
    ref, twin, drift = three
    rng = random.Random("forced tools")
    messages, tools, _ = tasks.tool_sample(rng, 2, with_result=False)
    messages = messages[:1] + history(rng, 1500, TokenCounter(ref)) + messages[1:]
    answer = ref.chat(messages, max_tokens=96, temperature=0.0, tools=tools, tool_choice="auto", logprobs=True,
                      top_logprobs=5)
    raw = generated(answer)
    assert raw and answer.logprobs, "the reference answered nothing"
    assert answer.finish_reason == "stop", answer.finish_reason
    assert len(ref.tokenize(messages=messages, tools=tools)) == answer.prompt_tokens
    assert len(ref.tokenize(messages=messages)) < answer.prompt_tokens, "the tools were not rendered"
    assert len(ref.tokenize(text=raw)) == len(answer.logprobs) - 1, "the answer does not re-tokenize as generated"
    same = force(ref, twin, messages, raw, k=5, gap=0.05, drift=0.01, tools=tools)
    assert isinstance(same, Forced), same
    assert same.positions == len(answer.logprobs) and same.partings == () and same.follows
    left = force(ref, drift, messages, raw, k=5, gap=0.05, drift=0.01, tools=tools)
    assert isinstance(left, Forced), left
    assert not left.follows and left.departure() is not None, left.describe()
