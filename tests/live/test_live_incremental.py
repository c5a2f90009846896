"""The live verdict kept up to date (gatekeeper/live/judgement.py): after every batch of pairs,
the incremental look gives exactly the JSON of judging the whole store from scratch
(`judge_store(..., sticky=True)`), on random stores whose plan changes under it (tenants, kinds,
JSON and tool requests appearing later, firings, sessions); it measures each pair once (a real
counter around gate 5's `measure`), a restarted proxy none, and a gatekeeper whose measures
changed all of them again; pairs the mirror commits while a look runs are judged by the next."""

from __future__ import annotations

import json
import random
import threading
from pathlib import Path

import pytest

from gatekeeper.traffic.answers import Answer
from gatekeeper.traffic.measures import measure
from gatekeeper.traffic.settings import ShadowSettings
from gatekeeper.traffic.store import PairStore, SqliteStore
from gatekeeper.live.judgement import LiveJudgement
from gatekeeper.live.measured import _sources, decode, encode, measured_of
from gatekeeper.live.verdict import judge_store
from gatekeeper.traffic.format import TrafficRecord, parse_record
from store_pairs import TOOLS, WORDS, Counted

SETTINGS = ShadowSettings(min_slice_requests=6)


def _pair(rng: random.Random, i: int, tenants: list[str], bad: dict[str, float]) -> tuple[TrafficRecord, Answer, Answer, Answer | None]:
    """One random stored pair: a chat, JSON, tool or long request of a tenant, maybe sampled, in a
    session; a candidate that breaks with the tenant's rate, a twin with a little noise; failed
    requests on every side now and then."""
    tenant = rng.choice(tenants)
    kind = rng.choice(("chat", "chat", "json", "tool", "long"))
    rounds = rng.randint(1, 4) if kind == "long" else 1
    msgs: list[dict] = []
    for r in range(rounds):
        msgs += [{"role": "user", "content": f"q{i}.{r}"}, {"role": "assistant", "content": "a"}]
    req: dict = {"messages": msgs[:-1], "temperature": rng.choice((0, 0, 0.7))}
    if kind == "json":
        req["response_format"] = {"type": "json_object"}
        ref = Answer(json.dumps({"k": rng.randint(0, 9)}), (), "stop", 8)
    elif kind == "tool":
        req["tools"] = TOOLS
        ref = Answer("", (("get_weather", json.dumps({"city": rng.choice(("Oslo", "Lima"))})),), "tool_calls", 9)
    else:
        ref = Answer(" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 15))), (), "stop", rng.randint(3, 15))
    if rng.random() < 0.05:
        req["logprobs"] = True
    obj = {"endpoint": "chat", "id": f"r{i}", "tenant": tenant, "request": req, "model_alias": rng.choice(("m1", "m1", "m2"))}
    if kind == "long":
        obj["tags"] = [f"session:s{rng.randint(0, 5)}"]

    def variant(p: float) -> Answer:
        roll = rng.random()
        if roll < 0.02:
            return Answer(error="http: 503")
        if roll >= p:
            return ref
        return rng.choice((Answer("!" * 30, (), "length", 30), Answer("not json {", (), "stop", 4),
                           Answer(ref.text[: len(ref.text) // 2] + " other words", ref.calls, "length", ref.tokens),
                           Answer("I'm sorry, I can't help with that.", (), "stop", 9),
                           Answer(ref.text, (), "stop", ref.tokens, nonfinite=True)))

    reference = Answer(error="timeout: slow") if rng.random() < 0.02 else ref
    twin = None if rng.random() < 0.02 else variant(0.02)
    return parse_record(obj, i), reference, variant(bad.get(tenant, 0.03)), twin


def _grow(store: PairStore, rng: random.Random, start: int, n: int, tenants: list[str], bad: dict[str, float]) -> int:
    for i in range(start, start + n):
        store.add(*_pair(rng, i, tenants, bad))
    if rng.random() < 0.5:  # an id already held: not stored again
        store.add(*_pair(rng, start, tenants, bad))
    return start + n


def _same(live: dict, full: dict) -> None:
    assert json.dumps(live, sort_keys=True) == json.dumps(full, sort_keys=True)


@pytest.mark.parametrize("seed", range(6))
def test_the_incremental_verdict_is_the_verdict_judged_from_scratch_after_every_batch(tmp_path: Path, seed: int):
    rng = random.Random(seed)
    store = SqliteStore(tmp_path / "s.db")
    live = LiveJudgement(store, SETTINGS, min_pairs=150)
    _same(live.judge(), judge_store(store, SETTINGS, 150, sticky=True))  # no pair yet
    tenants, bad, n, seen = ["acme"], {"beta": 0.3 if seed % 2 else 0.03}, 0, set()
    for batch in range(8):
        if batch in (2, 4, 6):  # tenants appear later (slices on the reserve); one may break the candidate
            tenants.append(("beta", "gamma", "delta")[batch // 2 - 1])
        n = _grow(store, rng, n, rng.choice((1, 7, 25, 60)), tenants, bad)
        data = live.judge()
        _same(data, judge_store(store, SETTINGS, 150, sticky=True))
        seen.add(data["verdict"])
        if batch == 5 and data["verdict"] == "ROLLBACK":
            store.reset_latch()  # an operator's reset: the next look judges afresh
    restarted = LiveJudgement(store, SETTINGS, min_pairs=150)
    _same(restarted.judge(), judge_store(store, SETTINGS, 150, sticky=True))
    assert len(data["slices"]) > 3
    if seed % 2:
        assert "ROLLBACK" in seen


def test_a_look_measures_only_the_pairs_stored_since_the_last_one(tmp_path: Path):
    """Old pairs are never measured again: not when the plan changes (a second tenant makes
    tenant slices, JSON requests a new test in `all`, so slices are judged from their start, from
    the cache), not after a restart; a gatekeeper whose measures changed measures them all again."""
    rng = random.Random(7)
    store = SqliteStore(tmp_path / "s.db")
    counted = Counted()
    live = LiveJudgement(store, SETTINGS, min_pairs=100, measure=counted)
    n = 0
    for _ in range(120):  # one tenant, chat only: `all` and no JSON test
        rec, ref, cand, twin = _pair(rng, n, ["acme"], {})
        if rec.kind in ("chat", "long_chat"):
            store.add(rec, ref, cand, twin)
            n += 1
    first = live.judge()
    assert counted.calls == n and [sl["slice"] for sl in first["slices"]][0] == "all"
    assert "tenant=acme" not in {sl["slice"] for sl in first["slices"]}
    before = live.analysis.slices
    n2 = _grow(store, rng, 1000, 40, ["acme", "beta"], {})
    second = live.judge()
    assert counted.calls == n + 40  # the new pairs only
    assert {"tenant=acme", "tenant=beta", "kind=json"} <= {sl["slice"] for sl in second["slices"]}
    assert before[next(iter(before))] is not live.analysis.slices[next(iter(before))]  # `all` judged again: json_parse
    _same(second, judge_store(store, SETTINGS, 100, sticky=True))
    _grow(store, rng, n2, 5, ["acme", "beta"], {})
    live.judge()
    assert counted.calls == n + 45

    again = Counted()
    restarted = LiveJudgement(store, SETTINGS, min_pairs=100, measure=again)
    _same(restarted.judge(), live.judge())
    assert again.calls == 0
    upgraded = Counted()
    LiveJudgement(store, SETTINGS, min_pairs=100, measure=upgraded, version="other measures").judge()
    assert upgraded.calls == len(store)


def test_a_cache_row_is_the_measures_it_was(tmp_path: Path):
    """Measures read back from the cache are the measures taken, and their version covers the
    code that takes them."""
    rng = random.Random(3)
    store = SqliteStore(tmp_path / "s.db")
    _grow(store, rng, 0, 200, ["acme", "beta"], {"beta": 0.4})
    for row in store.numbered_rows(0, store.last_seq()):
        m = measured_of(row, measure)
        assert decode(m.seq, encode(m)) == m
    assert decode(1, "{not json") is None and decode(1, '{"facts": []}') is None
    measuring = set(_sources("gatekeeper.live.measured"))  # what the cache's version hashes
    assert {"gatekeeper.traffic.measures", "gatekeeper.golden.degeneration", "gatekeeper.traffic.store",
            "gatekeeper.traffic.store.codec"} <= measuring


def test_pairs_committed_while_looks_run_are_judged_by_the_next(tmp_path: Path):
    """The mirror's thread commits pairs while the admin judge looks (a burst after each look
    ends, written while the next one runs): every look is the verdict of the pairs up to some
    point, and the last one, of them all."""
    rng = random.Random(11)
    store = SqliteStore(tmp_path / "s.db")
    live = LiveJudgement(store, SETTINGS, min_pairs=300)
    looked = threading.Event()

    def mirror() -> None:
        for burst in range(8):
            for i in range(burst * 25, burst * 25 + 25):
                store.add(*_pair(rng, i, ["acme", "beta", "gamma"], {"gamma": 0.2}))
            looked.wait(timeout=30)
            looked.clear()

    writer = threading.Thread(target=mirror)
    writer.start()
    seen = []
    while writer.is_alive():
        seen.append(live.judge()["pairs"])
        looked.set()
    writer.join()
    final = live.judge()
    _same(final, judge_store(store, SETTINGS, 300, sticky=True))
    assert seen == sorted(seen) and len(set(seen)) > 3 and final["pairs"] == len(store) == 200


def test_judging_a_store_read_only_ignores_and_keeps_its_measure_cache(tmp_path: Path):
    """A live proxy's store, cache and all, judged by `gatekeeper run --shadow-store`: the same
    pairs, and the files left byte-identical."""
    import hashlib

    from gatekeeper.gates.shadow.gate import _stored

    store = SqliteStore(tmp_path / "s.db")
    _grow(store, random.Random(5), 0, 50, ["acme"], {})
    LiveJudgement(store, SETTINGS).judge()
    rows = list(store.rows())
    store.close()
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(tmp_path.iterdir())}
    traffic, answers = _stored(ShadowSettings(store=str(tmp_path / "s.db")))
    assert [r.id for r in traffic.records] == [r.id for r, *_ in rows] and len(answers) == 50
    readonly = SqliteStore.open_readonly(tmp_path / "s.db")
    assert judge_store(readonly, SETTINGS)["pairs"] == 50
    readonly.close()
    assert {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(tmp_path.iterdir())} == before
