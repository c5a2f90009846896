"""Forcing the reference's answer on both targets tells a needle lost to a close call from one lost
to a regression (`gatekeeper/gates/forcing.py`): judged position by position as any
divergence is, on real servers."""

from __future__ import annotations

import random

import pytest

from gatekeeper.endpoints.client import Endpoint
from gatekeeper.endpoints.responses import TokenLogprob
from gatekeeper.gates.forcing import Forced, force
from gatekeeper.gates.longctx.prompts import needle_prompts
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


@pytest.mark.slow  # ~40 s: three servers
def test_a_twin_follows_the_forced_answer_and_a_rope_drift_build_leaves_it():
    """The reference's greedy answer to a long needle prompt, forced: an identical build chooses
    the reference's token at every position; a build whose rotary positions drift at long
    contexts (the prefill path sees it too) confidently leaves the answer."""
    with (running_server(GK_TINY, "--profile", "optimized") as a, running_server(GK_TINY, "--profile", "optimized") as b,
          running_server(GK_TINY, "--profile", "optimized", "--fault", "rope-drift") as c):
        ref, twin, drift = (Endpoint(role, s.url, "gk-tiny") for role, s in
                            (("reference", a), ("candidate", b), ("candidate", c)))
        prompt = needle_prompts(TokenCounter(ref), random.Random("forced"), 1900, [0.5])[0]
        answer = ref.chat(prompt.messages, max_tokens=16, temperature=0.0).text
        assert answer, "the reference answered nothing"
        same = force(ref, twin, prompt.messages, answer, k=5, gap=0.05, drift=0.01)
        assert isinstance(same, Forced), same
        assert same.positions >= 2 and same.partings == () and same.follows
        left = force(ref, drift, prompt.messages, answer, k=5, gap=0.05, drift=0.01)
        assert isinstance(left, Forced), left
        assert not left.follows and left.departure() is not None, left.describe()
