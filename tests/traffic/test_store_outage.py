"""The PostgreSQL store through an outage, with a real server stopped and started again
(tests/helpers/pg_server.py, a server of this test's own) and a replica's real admin server:

- pairs buffered but not committed are `pending`, never counted as stored in `/metrics`;
- while the server is down `add` goes on without raising; at most `max_pending` pairs wait, the
  oldest beyond are dropped, counted (`store_dropped_total`) and logged, and `/metrics` is still
  served, saying `store_degraded` 1; `/healthz` stays 200 (liveness) and says "degraded: ...";
- once the server is back the flush thread commits the pairs that waited, with no other help:
  the store holds the pairs committed before the outage and the newest `max_pending` after it."""

from __future__ import annotations

import time

import httpx
import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families

from gatekeeper.live.admin import serve_admin
from gatekeeper.live.mirror import Counters, Mirror, MirrorConfig, Upstream
from gatekeeper.traffic.store import Batching
from pg_server import PASSWORD, PgServer
from store_pairs import pair

MAX_PENDING, FLUSH_PAIRS = 20, 4


def _metrics(url: str) -> dict[str, float]:
    """The samples labelled with the replica alone (the counters and gauges), by name."""
    text = httpx.get(url + "/metrics", timeout=60).text
    samples = [s for f in text_string_to_metric_families(text) for s in f.samples]
    assert {s.labels["replica"] for s in samples} == {"r1"}
    return {s.name: s.value for s in samples if set(s.labels) == {"replica"}}


def _health(url: str) -> str:
    """`/healthz`'s body, asserting its status is 200 (liveness, whatever the store does)."""
    r = httpx.get(url + "/healthz", timeout=10)
    assert r.status_code == 200
    return r.text.strip()


def _counts(m: dict[str, float]) -> tuple[float, ...]:
    return tuple(m[f"gatekeeper_shadow_{n}"] for n in ("stored_total", "pending_pairs", "store_dropped_total",
                                                      "store_degraded"))


def test_an_outage_holds_at_most_max_pending_pairs_and_commits_them_when_the_server_is_back(own_server: PgServer, caplog):
    url = own_server.create_database("outage")
    cfg = MirrorConfig(store=url, shadow=Upstream("http://127.0.0.1:9"), min_pairs=400, judge_interval_s=0.0, replica="r1",
                       batching=Batching(FLUSH_PAIRS, 600.0, MAX_PENDING))
    mirror = Mirror(cfg)
    admin = serve_admin(cfg, mirror, Counters())
    admin_url = f"http://127.0.0.1:{admin.server_address[1]}"
    try:
        for i in range(8):
            mirror.store.add(*pair(2, i, bad=0.0))
        mirror.store.flush()
        for i in range(8, 11):  # fewer than a batch: pending, not stored
            mirror.store.add(*pair(2, i, bad=0.0))
        assert _counts(_metrics(admin_url)) == (8, 3, 0, 0)
        assert _health(admin_url) == "ok"
        assert _metrics(admin_url)["gatekeeper_shadow_pairs_judged"] == 8  # the store's pairs, not the pending ones

        own_server.halt()
        for i in range(11, 48):  # 40 pairs wait in all: the oldest 20 (8..27) are dropped
            assert mirror.store.add(*pair(2, i, bad=0.0))
        stats = mirror.store.write_stats()
        assert (stats.stored, stats.pending, stats.dropped) == (8, MAX_PENDING, 40 - MAX_PENDING)
        assert stats.failing is not None and "the pair store failed" in stats.failing and PASSWORD not in stats.failing
        dropped_lines = [r.getMessage() for r in caplog.records if "dropped unstored" in r.getMessage()]
        assert dropped_lines and "20 pending" in dropped_lines[0] and PASSWORD not in " ".join(dropped_lines)
        assert len(dropped_lines) == 1  # one line per outage (then one every 10 s at most), not one per pair
        during = _metrics(admin_url)  # served without the database: the counters, degraded
        assert _counts(during) == (8, MAX_PENDING, 20, 1) and "gatekeeper_shadow_pairs_judged" not in during
        assert httpx.get(admin_url + "/verdict", timeout=60).status_code == 500  # no verdict without the store
        health = _health(admin_url)  # still 200 (alive: a restart would lose the waiting pairs), degraded
        assert health.startswith("degraded: the pair store is failing, 20 pair(s) wait for a retry, 20 dropped"), health
        assert PASSWORD not in health

        own_server.resume()
        deadline = time.monotonic() + 60
        while mirror.store.write_stats().pending and time.monotonic() < deadline:  # the flush thread's retry
            time.sleep(0.2)
        assert _counts(_metrics(admin_url)) == (28, 0, 20, 0)
        assert _health(admin_url) == "ok (20 pair(s) dropped unstored during an earlier outage)"
        with psycopg.connect(url) as db:
            ids = [i for (i,) in db.execute("SELECT id FROM pairs ORDER BY seq")]
        assert ids == [f"r{i}" for i in (*range(8), *range(28, 48))]  # the newest kept, in their order
        assert httpx.get(admin_url + "/verdict", timeout=60).json()["pairs"] == 28
        assert any("writing again (20 pair(s) dropped in all)" in r.getMessage() for r in caplog.records)
    finally:
        admin.shutdown()
        mirror.store.close()


def test_pairs_left_when_the_store_closes_unreachable_are_an_error_saying_how_many(own_server: PgServer):
    from gatekeeper.traffic.store import open_store
    from gatekeeper.traffic.store.postgres import StoreError

    url = own_server.create_database("closing")
    store = open_store(url, batching=Batching(10, 60.0, 100))
    for i in range(3):
        store.add(*pair(1, i))
    own_server.halt()
    try:
        with pytest.raises(StoreError, match=r"3 pair\(s\) not stored") as e:
            store.close()
        assert PASSWORD not in str(e.value)
    finally:
        own_server.resume()
