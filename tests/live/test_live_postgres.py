"""Two `gatekeeper shadow` replicas' admin servers over one PostgreSQL store (a real server,
tests/helpers/pg_server.py): both `/verdict`s give the same answer over the same pairs, a
ROLLBACK latched by one is every replica's at its next look, and one reset clears it for all —
without waiting for new pairs."""

from __future__ import annotations

import json

from gatekeeper.live.admin import Judge
from gatekeeper.live.mirror import Counters, Mirror, MirrorConfig, Upstream
from gatekeeper.traffic.store import Batching
from store_pairs import pair


def _replica(url: str, name: str) -> tuple[Mirror, Judge]:
    cfg = MirrorConfig(store=url, shadow=Upstream("http://127.0.0.1:9"), min_pairs=400, judge_interval_s=0.0, replica=name,
                       batching=Batching(8, 0.5))
    mirror = Mirror(cfg)
    return mirror, Judge(cfg, mirror, Counters())


def _verdict(judge: Judge) -> dict:
    data = judge.current()
    data.pop("mirror")
    return data


def test_replicas_give_one_verdict_and_share_one_latch(pg_url: str):
    (ma, a), (mb, b) = _replica(pg_url, "a"), _replica(pg_url, "b")
    for i in range(60):  # clean pairs (beta's candidate not broken), half through each replica
        (ma if i % 2 else mb).store.add(*pair(2, i, bad=0.0))
    ma.store.flush()
    mb.store.flush()
    first = _verdict(a)
    assert first["verdict"] == "HOLD" and first["pairs"] == 60
    assert json.dumps(_verdict(b), sort_keys=True) == json.dumps(first, sort_keys=True)
    ma.store.latch({"reason": "task_success_down: beta", "judged": 60, "pairs": 60})  # replica a's look rolled back
    assert _verdict(a)["verdict"] == _verdict(b)["verdict"] == "ROLLBACK"  # no new pair needed to see it
    assert b.reset() is not None  # an operator resets replica b
    assert _verdict(a)["verdict"] == "HOLD" and _verdict(b)["verdict"] == "HOLD"
    assert a.reset() is None
    for m in (ma, mb):
        m.store.close()
