"""The kept-alive connection's race, through a real proxy in front of the real bundled server: a
request the server's side closes before any answer is sent once more on a fresh connection,
counted as a reconnection; nothing else is sent twice."""

from __future__ import annotations

import time

from gatekeeper.endpoints.client import Endpoint
from keepalive_proxy import keepalive_proxy
from paths import GK_TINY
from server_util import running_server

MSG = [{"role": "user", "content": "Reply with exactly: OK"}]


def test_requests_lost_on_kept_alive_connections_are_sent_again_and_counted():
    with running_server(GK_TINY) as server, keepalive_proxy(server.url, rate=0.3, seed=7) as proxy:
        ep = Endpoint("candidate", proxy.url, "gk-tiny")
        ep.gate = "golden"
        answers = [ep.chat(MSG, max_tokens=4, stream=i % 2 == 1).text for i in range(30)]
        ep.close()
    assert proxy.dropped > 0 and proxy.reused >= 10  # the connection was kept alive, and some requests were lost
    assert len(answers) == 30 and len(set(answers)) == 1  # every request answered, the same greedy answer
    assert sum(r.reconnected for r in ep.retried) == proxy.dropped == len(ep.retried)
    assert ep.sent["golden"] == 30 and proxy.relayed == 30  # the server saw each request once


def test_a_pooled_connection_expires_before_a_server_keep_alive_would_close_it():
    """An idle pooled connection is not reused after KEEPALIVE_EXPIRY_S: a request after a pause
    longer than that goes out on a new connection (the race cannot happen on it)."""
    with running_server(GK_TINY) as server, keepalive_proxy(server.url, rate=1.0, seed=1) as proxy:
        ep = Endpoint("candidate", proxy.url, "gk-tiny")
        ep.chat(MSG, max_tokens=2)
        time.sleep(2.5)
        ep.chat(MSG, max_tokens=2)
        ep.close()
    assert proxy.dropped == 0 and proxy.reused == 0 and not ep.retried
