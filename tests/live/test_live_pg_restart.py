"""PostgreSQL restarted under real proxy load: two `gatekeeper shadow` replicas (each a real proxy
with its mirror process) mirror a steady client load into one store (tests/helpers/replica_load.py)
when the database goes down at once (`pg_ctl stop -m immediate`: every connection cut, as a crash or
a failover does) and comes back on the same address OUTAGE_S later, the clients going on throughout.

Checked:
- the clients never notice: every request is answered (the mirror is off the request path);
- while the database is down each replica says so, `/healthz` still 200 with "degraded: …" and
  `/metrics` `store_degraded` 1, and its pairs wait (`pending_pairs` > 0);
- once it is back each replica commits what waited with no help and says "ok" again;
- no pair is lost silently: after a clean stop every request a client had answered is a stored
  pair, stored once, except copies counted as dropped (`dropped`: a full queue; `store_dropped`: a
  full retry buffer — none expected in a short outage, with 10,000 pairs allowed to wait)."""

from __future__ import annotations

import time

import httpx
from prometheus_client.parser import text_string_to_metric_families

from pg_server import PgServer
from replica_load import FLUSH_PAIRS, Load, replica, stored_contents, upstream
from scripted_server import scripted_server

OUTAGE_S = 3.0


def _health(admin: str) -> str:
    r = httpx.get(admin + "/healthz", timeout=30)
    assert r.status_code == 200  # liveness, whatever the store does
    return r.text.strip()


def _gauges(admin: str) -> dict[str, float]:
    text = httpx.get(admin + "/metrics", timeout=60).text
    return {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples if set(s.labels) == {"replica"}}


def _until(what: str, ok, deadline_s: float = 90.0) -> None:  # noqa: ANN001 — a predicate
    deadline = time.monotonic() + deadline_s
    while not ok():
        assert time.monotonic() < deadline, f"not within {deadline_s:.0f} s: {what}"
        time.sleep(0.2)


def test_a_database_restart_under_load_loses_no_pair_silently(own_server: PgServer):
    url = own_server.create_database("restart")
    with scripted_server(upstream) as (up, _), replica(up, url, "a") as a, replica(up, url, "b") as b:
        loads = {"a": Load(a.url, "a"), "b": Load(b.url, "b")}
        _until("two batches stored by each replica", lambda: all(
            len(stored_contents(url).get(name, [])) >= 2 * FLUSH_PAIRS for name in loads))
        own_server.halt()
        _until("both replicas degraded", lambda: all(_health(r.admin).startswith("degraded: ") for r in (a, b)))
        down = {name: _gauges(r.admin) for name, r in (("a", a), ("b", b))}
        time.sleep(OUTAGE_S)
        own_server.resume()
        _until("both replicas ok again", lambda: all(_health(r.admin).startswith("ok") for r in (a, b)))
        time.sleep(1.0)  # the load goes on after the restart
        answered = {name: load.join() for name, load in loads.items()}
        assert all(load.failed == 0 for load in loads.values())  # every client request answered
        counts = {name: r.verdict()["mirror"] for name, r in (("a", a), ("b", b))}
        for r in (a, b):
            said = r.stop()
            assert r.proc.returncode == 0 and "had not finished" not in said, said  # SIGTERM: the last batch committed
    stored = stored_contents(url)
    for name in loads:
        assert down[name]["gatekeeper_shadow_store_degraded"] == 1 and down[name]["gatekeeper_shadow_pending_pairs"] > 0
        kept, c = stored[name], counts[name]
        assert c["store_dropped"] == 0, c
        assert len(set(kept)) == len(kept) and set(kept) <= set(answered[name])  # answered requests, each stored once
        assert len(kept) == len(answered[name]) - c["dropped"], (name, len(kept), len(answered[name]), c)
