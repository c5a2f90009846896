"""Gate 4's token counter through a real bundled server behind a real proxy: a `/tokenize` the
server does not have means counts from the engine's own usage.prompt_tokens from then on (said so);
a transient failure propagates (the gate ERRORs with its class) instead of quietly turning exact
prompt lengths into guesses."""

from __future__ import annotations

import pytest

from fault_proxy import fault_proxy
from gatekeeper.endpoints.client import Endpoint
from gatekeeper.errors import EndpointError
from gatekeeper.gates.longctx.tokens import TokenCounter, estimate
from server_util import running_server

MESSAGES = [{"role": "user", "content": "Count these words, please: the river and the bridge."}]


@pytest.fixture(scope="module")
def upstream(tiny_model_dir):
    with running_server(tiny_model_dir) as server:
        yield server


def _counter(url: str) -> TokenCounter:
    probe = Endpoint("reference", url, "", timeout_s=10.0)
    model = probe.get("/v1/models").json()["data"][0]["id"]
    probe.close()
    return TokenCounter(Endpoint("reference", url, model, timeout_s=10.0))


def test_exact_counts_through_a_passing_proxy(upstream):
    with fault_proxy(upstream.url, "pass") as url:
        counter = _counter(url)
        n = counter.count(MESSAGES)
        assert n > 0 and not counter.estimated and counter.calls == 1


def test_a_server_without_tokenize_counts_by_its_own_usage_and_says_so(upstream):
    """llama-cpp-python's server has no /tokenize: the engine's usage.prompt_tokens of the same messages
    (a one-token chat request) is the same count /tokenize gives, not a four-characters-a-token guess."""
    exact = _counter(upstream.url).count(MESSAGES)
    with fault_proxy(upstream.url, "no_tokenize") as url:
        counter = _counter(url)
        assert counter.count(MESSAGES) == exact != estimate(MESSAGES)
        assert counter.by_usage and not counter.estimated and counter.calls == 2
        assert "usage.prompt_tokens" in counter.source and "404" in counter.source
        counter.count(MESSAGES)
        assert counter.calls == 3  # /tokenize not asked again
        # A prompt past the server's context is refused: counted at the tokens per character seen so far.
        words = " ".join(["the river and the bridge."] * 4000)
        long = counter.count([{"role": "user", "content": words}])
        assert long > 4000 and not counter.estimated


def test_a_counter_made_to_count_by_usage_never_asks_for_tokenize(upstream):
    exact = _counter(upstream.url).count(MESSAGES)
    with fault_proxy(upstream.url, "no_tokenize") as url:
        plain = _counter(url)
        counter = TokenCounter.by_usage_of(plain.endpoint, "no target exposes /tokenize")
        assert counter.count(MESSAGES) == exact and counter.calls == 1
        assert counter.source.endswith("usage.prompt_tokens of one-token chat requests (no target exposes /tokenize)")


def test_without_an_endpoint_counts_are_estimated():
    counter = TokenCounter(None)
    assert counter.count(MESSAGES) == estimate(MESSAGES) and counter.estimated
    assert counter.source == "estimated: no target exposes /tokenize"


def test_a_transient_failure_propagates_and_does_not_switch_to_estimates(upstream):
    with fault_proxy(upstream.url, "http500", after=1) as url:
        counter = _counter(url)
        first = counter.count(MESSAGES)
        with pytest.raises(EndpointError) as e:
            counter.count(MESSAGES)
        assert e.value.status == 500 and not e.value.refusal
        assert not counter.estimated and counter.endpoint is not None and first > 0
