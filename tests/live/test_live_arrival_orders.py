"""The incremental live verdict equals a full recompute over a shared store, whatever order the
pairs arrive in: two replicas (two writers on one PostgreSQL database — a real server,
tests/helpers/pg_server.py — or one SQLite file) store a stream of pairs in a random order,
spread at random between them, each committing its own batches (flush sizes 1 to 8, flushed at
random moments), while replica `a` looks again and again. At every look three judgements agree,
JSON for JSON:

- replica `a`'s incremental look (`LiveJudgement` over its writer store: only the pairs committed
  since its last look are measured and added to the carried e-processes and counts);
- a full recompute (`judge_store`, every pair measured afresh: `--recompute`, `?recompute=1`);
- the stateless `gatekeeper shadow verdict` path (`LiveJudgement` over a read-only store: the
  replicas' cached measures, the rest measured in memory).

The sequential e-processes depend on the order they see pairs in, so "the same pairs" needs an
order: every judgement reads the store's insertion order (`seq`, the order batches committed,
one batch at a time), not the order requests arrived at the replicas. The test asserts that the
stored order is not the arrival order where replicas batch (PostgreSQL; SQLite commits each pair
as it comes), and that every look still agrees. Each pair is measured once in all (replica a's looks); the read-only
path, after a look, measures none."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from gatekeeper.live.judgement import LiveJudgement
from gatekeeper.live.verdict import judge_store
from gatekeeper.traffic.settings import ShadowSettings
from gatekeeper.traffic.store import Batching, PairStore, open_store
from store_pairs import Counted, pair

SETTINGS = ShadowSettings(min_slice_requests=6)
MIN_PAIRS = 150
NUM_PAIRS = 220


@pytest.fixture(params=["postgres", "sqlite"])
def shared(request, tmp_path: Path) -> str:
    """The store both replicas write: a fresh PostgreSQL database, or a SQLite file."""
    return request.getfixturevalue("pg_url") if request.param == "postgres" else str(tmp_path / "shared.db")


def _text(data: dict) -> str:
    return json.dumps(data, sort_keys=True)


def _look(shared: str, live: LiveJudgement) -> dict:
    """Replica a's incremental look, checked against a full recompute and the read-only path."""
    data = live.judge()
    with open_store(shared, readonly=True) as ro:
        full = judge_store(ro, SETTINGS, MIN_PAIRS, sticky=True)
        counted = Counted()
        cached = LiveJudgement(ro, SETTINGS, MIN_PAIRS, measure=counted).judge()
    assert counted.calls == 0  # every pair a's look saw was in the cache: read, not measured
    assert _text(data) == _text(full), "incremental look != full recompute"
    assert _text(cached) == _text(full), "read-only cached look != full recompute"
    return data


def _stored_ids(store: PairStore) -> list[str]:
    return [row[1].id for row in store.numbered_rows(0, store.last_seq())]


@pytest.mark.parametrize("seed", range(4))
def test_incremental_looks_equal_full_recomputes_over_random_arrival_orders(shared: str, seed: int):
    rng = random.Random(seed)
    bad = 0.3 if seed % 2 else 0.0  # odd seeds: beta's candidate breaks (a ROLLBACK fires and latches)
    arrival = list(range(NUM_PAIRS))
    rng.shuffle(arrival)
    a = open_store(shared, replica="a", batching=Batching(rng.randint(1, 8), 3600.0))
    b = open_store(shared, replica="b", batching=Batching(rng.randint(1, 8), 3600.0))  # flushed only when full or told
    try:
        measured = Counted()
        live = LiveJudgement(a, SETTINGS, MIN_PAIRS, measure=measured)
        looks, verdicts = 0, set()
        for i in arrival:
            rng.choice((a, b)).add(*pair(seed, i, bad=bad))
            if rng.random() < 0.08:
                rng.choice((a, b)).flush()
            if rng.random() < 0.07:
                verdicts.add(_look(shared, live)["verdict"])
                looks += 1
        a.flush()
        b.flush()
        last = _look(shared, live)
        verdicts.add(last["verdict"])
        assert last["pairs"] == NUM_PAIRS and looks >= 5
        assert measured.calls == NUM_PAIRS  # each pair measured once, by the look after it was committed
        stored = _stored_ids(a)
        assert sorted(stored) == sorted(f"r{i}" for i in range(NUM_PAIRS))
        if shared.startswith("postgresql"):  # batches: the committed order is not the arrival order (SQLite commits each pair)
            assert stored != [f"r{i}" for i in arrival]
            assert {r for (r,) in _replicas(shared)} == {"a", "b"}
        if bad:
            assert "ROLLBACK" in verdicts and last["fired"]
        restarted = LiveJudgement(b, SETTINGS, MIN_PAIRS)  # another replica's first look: from the cache
        assert _text(restarted.judge()) == _text(last)
    finally:
        a.close()
        b.close()


def _replicas(shared: str) -> list[tuple[str]]:
    """The replica names the PostgreSQL store's rows carry."""
    import psycopg

    with psycopg.connect(shared) as db:
        return [tuple(r) for r in db.execute("SELECT DISTINCT replica FROM pairs").fetchall()]
