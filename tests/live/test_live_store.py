"""The pair store on disk: pairs round-trip, an export re-imports into another store without
duplicates, a line without a pair is a file:line error; long-session SQDR from session tags."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gatekeeper.errors import ConfigError
from gatekeeper.traffic.answers import Answer
from gatekeeper.traffic.settings import ShadowSettings
from gatekeeper.traffic.store import SqliteStore
from gatekeeper.live.verdict import judge_store
from gatekeeper.traffic.format import parse_record


def _record(i: int, rounds: int = 1, session: str | None = None):
    msgs = []
    for r in range(rounds):
        msgs += [{"role": "user", "content": f"q{r}"}, {"role": "assistant", "content": f"a{r}"}]
    obj = {"endpoint": "chat", "id": f"r{i}", "tenant": "acme", "request": {"messages": msgs[:-1], "temperature": 0}}
    if session:
        obj["tags"] = [f"session:{session}"]
    return parse_record(obj, i)


def test_pairs_round_trip_and_merge_without_duplicates(tmp_path: Path):
    a = SqliteStore(tmp_path / "a.db")
    for i in range(5):
        assert a.add(_record(i), Answer(f"ref {i}"), Answer(f"cand {i}", tokens=3), Answer(f"ref {i}"))
    assert not a.add(_record(0), Answer("x"), Answer("y"), None)  # an id already held
    rows = list(a.rows())
    assert [r.id for r, *_ in rows] == [f"r{i}" for i in range(5)] and rows[2][2] == Answer("cand 2", tokens=3)
    assert a.export(tmp_path / "a.jsonl") == 5
    merged = SqliteStore(tmp_path / "m.db")
    assert merged.import_file(tmp_path / "a.jsonl") == (5, 0)
    assert merged.import_file(tmp_path / "a.jsonl") == (0, 5)
    assert list(merged.rows()) == rows


def test_an_import_line_without_a_pair_names_file_and_line(tmp_path: Path):
    f = tmp_path / "plain.jsonl"
    f.write_text(json.dumps({"endpoint": "chat", "request": {"messages": [{"role": "user", "content": "hi"}]}}) + "\n")
    with pytest.raises(ConfigError) as e:
        SqliteStore(tmp_path / "s.db").import_file(f)
    assert "plain.jsonl:1" in str(e.value) and "pair" in str(e.value)
    with pytest.raises(ConfigError, match="not found"):
        SqliteStore(tmp_path / "absent.db", create=False)


def test_sqdr_is_reported_where_sessions_are_visible(tmp_path: Path):
    store = SqliteStore(tmp_path / "s.db")
    n = 0
    for s in range(8):  # eight sessions of four rounds; the candidate drifts from round 3 on
        for rnd in range(1, 5):
            ref = Answer(f"answer {s}-{rnd}")
            cand = ref if rnd < 3 or s % 2 else Answer(f"something else {s}-{rnd}")
            store.add(_record(n, rnd, f"sess{s}"), ref, cand, ref)
            n += 1
    data = judge_store(store, ShadowSettings(), min_pairs=10)
    sessions = data["sessions"]
    assert sessions["sessions"] == 8 and sessions["rounds"] == [1, 2, 3, 4]
    assert sessions["pass_rate"]["candidate"] == [1.0, 1.0, 0.5, 0.5] and sessions["pass_rate"]["twin"] == [1.0] * 4
    assert sessions["sqdr"] == {"candidate": 0.125, "twin": 0.0}
    plain = SqliteStore(tmp_path / "plain.db")
    plain.add(_record(0), Answer("a"), Answer("a"), Answer("a"))
    assert judge_store(plain, ShadowSettings(), min_pairs=1)["sessions"] is None  # no session header: not reported


def test_the_recorders_file_rotates_by_size_into_numbered_segments(tmp_path: Path):
    from gatekeeper.live.recorder import TrafficWriter
    from gatekeeper.traffic.format import load_traffic

    out = tmp_path / "t.jsonl"
    writer = TrafficWriter(out, rotate_bytes=600)
    for i in range(12):
        writer.write(_record(i, rounds=2))
    writer.close()
    segments = sorted(tmp_path.glob("t.*.jsonl"), key=lambda p: int(p.name.split(".")[1]))
    assert [p.name for p in segments][:2] == ["t.1.jsonl", "t.2.jsonl"]
    ids = [r.id for p in [*segments, out] if p.exists() and p.stat().st_size for r in load_traffic(p).records]
    assert ids == [f"r{i}" for i in range(12)]  # every record once, in order, each segment a valid traffic file
    assert all(p.stat().st_size >= 600 for p in segments)


@pytest.mark.parametrize("garbled", [False, True])
def test_a_store_is_judged_by_a_run_whose_targets_are_not_even_up(tmp_path: Path, garbled: bool):
    """`gatekeeper run --gates shadow --shadow-store`: gate 5 sends nothing, so unreachable URL
    targets do not stop it; 40 stored pairs, the candidate agreeing or garbling every other one."""
    from run_util import gk_run
    from server_util import free_port

    store = SqliteStore(tmp_path / "s.db")
    for i in range(40):
        ref = Answer(f"The answer to question {i} is {i * 7}.", finish_reason="stop", tokens=9)
        cand = Answer("!!!!!!!!!!!!!!!!", finish_reason="length", tokens=16) if garbled and i % 2 else ref
        store.add(_record(i), ref, cand, ref)
    store.close()
    policy = tmp_path / "p.yaml"
    policy.write_text("version: 1\ngates:\n  shadow:\n    min_slice_requests: 8\n"  # 40 pairs rule out ~9 points, no less:
                      "    materiality: {disagreement: 0.12, task_failure: 0.12, degeneration: 0.12, error: 0.12, retry: 0.12}\n"
                      "    stages:\n      - {name: all, share: 1.0, budget: 40}\n")
    dead = [f"http://127.0.0.1:{free_port()}" for _ in range(2)]
    out = gk_run(tmp_path / "runs", "--gates", "shadow", "--shadow-store", str(tmp_path / "s.db"), "--policy", str(policy),
                 "--reference", dead[0], "--candidate", dead[1], "--served-model", "m")
    assert out.summary is not None, out.stderr
    assert out.summary["verdict"] == ("ROLLBACK" if garbled else "PROMOTE"), out.summary["reasons"]
    judged = out.gate("shadow")["coverage"]["judged"]
    assert judged < 40 if garbled else judged == 40  # a fired measure stops the stage early (stop_early)
    if not garbled:  # each rule states what it rules out, within the policy's materiality
        limit = out.check("shadow.rule.errors_up")["detection_limit"]
        assert limit["unit"] == "excess" and limit["judged"] == 40 and limit["effect"] <= limit["materiality"] == 0.12
    if garbled:
        assert out.check("shadow.rule.answers_differ")["status"] == "FAIL"
        garbage = out.check("shadow.rule.garbage_rate_up")  # fired too, or left undecided where answers_differ stopped the stage
        assert garbage["status"] == "FAIL" or garbage.get("undecided"), garbage


def test_a_live_rollback_is_sticky_until_reset(tmp_path: Path):
    """A ROLLBACK latches in the store; while latched, the live verdict stays ROLLBACK whatever
    the recomputed one says (the score, say, recovers as clean pairs arrive), and says why; the
    operator's reset judges afresh."""
    store = SqliteStore(tmp_path / "s.db")
    for i in range(40):  # the candidate answers otherwise in one pair in four
        ref = Answer(f"answer {i}")
        store.add(_record(i), ref, ref if i % 4 else Answer(f"garbled {i}"), ref)
    first = judge_store(store, ShadowSettings(), min_pairs=60, sticky=True)
    assert first["verdict"] == "ROLLBACK" and first["latched"]["judged"] == 40
    assert judge_store(store, ShadowSettings(), min_pairs=60)["verdict"] == "ROLLBACK"
    assert "latched" not in judge_store(store, ShadowSettings(), min_pairs=60)  # only the live proxy latches

    clean = SqliteStore(tmp_path / "clean.db")  # a store whose pairs show nothing, with a ROLLBACK latched
    for i in range(500):  # enough to rule out 2 points of errors (80 would be undecided: see below)
        ref = Answer(f"answer {i}")
        clean.add(_record(i), ref, ref, ref)
    assert judge_store(clean, ShadowSettings(), min_pairs=60, sticky=True)["verdict"] == "PROMOTE"
    clean.latch(first)
    later = judge_store(clean, ShadowSettings(), min_pairs=60, sticky=True)
    assert later["verdict"] == "ROLLBACK" and later["reason"].startswith("latched: rolled back after 40 judged pairs")
    assert "/verdict/reset" in later["reason"]
    assert clean.reset_latch() is not None and clean.latched() is None
    assert judge_store(clean, ShadowSettings(), min_pairs=60, sticky=True)["verdict"] == "PROMOTE"


def test_a_clean_store_too_small_to_rule_out_the_materiality_holds_saying_what_would_decide_it(tmp_path: Path):
    store = SqliteStore(tmp_path / "s.db")
    for i in range(80):
        ref = Answer(f"answer {i}")
        store.add(_record(i), ref, ref, ref)
    data = judge_store(store, ShadowSettings(), min_pairs=60)
    assert data["verdict"] == "HOLD" and data["reason"].startswith("undecided: ")
    assert "wider than the materiality; about" in data["reason"] and "judged pairs would decide it" in data["reason"]
    errors = data["rules"]["errors_up"]
    assert errors["status"] == "PASS" and errors["limit"]["upper"] > errors["limit"]["materiality"] == 0.02
    assert 80 < errors["pairs_to_decide"] < 300


def test_the_admin_address_resets_a_latched_rollback(tmp_path: Path):
    """`POST /verdict/reset` on the real admin server clears the latch; `/verdict` says it until then."""
    from types import SimpleNamespace

    import httpx

    from gatekeeper.live.admin import serve_admin
    from gatekeeper.live.mirror import Counters, MirrorConfig, Upstream

    store = SqliteStore(tmp_path / "s.db")
    for i in range(500):
        ref = Answer(f"answer {i}")
        store.add(_record(i), ref, ref, ref)
    store.latch({"reason": "answers_differ: disagreement in all", "judged": 40, "pairs": 40})
    cfg = MirrorConfig(store=str(tmp_path / "s.db"), shadow=Upstream("http://127.0.0.1:9"), min_pairs=60, judge_interval_s=0.0)
    mirror = SimpleNamespace(store=store, stats={"stored": len(store)})  # the admin server reads only these
    server = serve_admin(cfg, mirror, Counters())  # type: ignore[arg-type]
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        before = httpx.get(url + "/verdict").json()
        assert before["verdict"] == "ROLLBACK" and before["reason"].startswith("latched:")
        assert httpx.get(url + "/verdict/rollback").status_code == 200
        reset = httpx.post(url + "/verdict/reset")
        assert reset.status_code == 200 and reset.json()["reset"] is True
        assert httpx.get(url + "/verdict").json()["verdict"] == "PROMOTE"
        assert httpx.post(url + "/verdict/reset").json()["reset"] is False
        assert httpx.post(url + "/elsewhere").status_code == 404
    finally:
        server.shutdown()


def test_slices_that_appear_later_draw_on_a_reserve_and_no_alpha_ever_shrinks(tmp_path: Path):
    """The live verdict's alpha split never shrinks an alpha once given: the first judgement's
    slices (none declared) keep theirs, a tenant that appears later gets its alpha from the
    reserve (the j-th: alpha × slice_reserve × 2^-j), a measure that starts to apply to an
    existing slice (acme's first JSON request) takes the share kept for it and takes nothing from
    the others, and the whole stays within alpha however many slices appear."""
    from gatekeeper.traffic.analysis import CRITICAL, SliceKey, allocate_live
    from gatekeeper.traffic.judging import facts_of, slice_plan
    from gatekeeper.traffic.pair_of import pairs

    def record(i: int, tenant: str, json_: bool = False):
        request = {"messages": [{"role": "user", "content": f"q{i}"}], "temperature": 0,
                   **({"response_format": {"type": "json_object"}} if json_ else {})}
        return parse_record({"endpoint": "chat", "id": f"{tenant}{i}{json_}", "tenant": tenant, "request": request}, i)

    store = SqliteStore(tmp_path / "s.db")
    s = ShadowSettings()
    t = s.thresholds()
    splits = []
    for look, tenant in enumerate(["acme", "beta", "gamma", "delta", "eps", "zeta"]):
        for i in range(30):
            ref = Answer(f"answer {tenant} {i}")
            store.add(record(i, tenant), ref, ref, ref)
        if look == 3:  # acme's (and all's) first JSON requests: json_parse starts to apply to existing slices
            for i in range(3):
                store.add(record(i, "acme", json_=True), Answer("{}"), Answer("{}"), Answer("{}"))
        assert judge_store(store, s, min_pairs=60, sticky=True)["verdict"] in ("HOLD", "PROMOTE")
        plan = slice_plan((facts_of(p) for p in pairs(store)), s.min_slice_requests)
        order, first = store.slice_order([str(k) for k, _ in plan])
        splits.append(allocate_live(plan, t, order, first))
        assert sum(splits[-1].values()) <= t.alpha + 1e-12, look
    assert order[:first] == ["all"]  # one tenant at the first look: only `all` was a slice
    for before, after in zip(splits, splits[1:]):  # a slice's alpha, once given, never changes
        assert all(after[key] == a for key, a in before.items()), (before, after)
    acme = SliceKey("tenant", "acme")
    assert (acme, "json_parse") in splits[-1] and (acme, "json_parse") not in splits[2]
    assert splits[-1][(acme, "json_parse")] == splits[-1][(acme, "disagreement")]  # the share kept for it
    assert splits[-1][(acme, "disagreement")] > splits[-1][(SliceKey("tenant", "gamma"), "disagreement")]
    assert splits[-1][(SliceKey("tenant", "beta"), "disagreement")] == t.alpha * t.slice_reserve * 2 ** -2 / len(CRITICAL)


def test_a_declared_tenant_has_its_alpha_before_its_first_pair_and_by_its_weight():
    """`slice_weights`: declared slices share alpha × (1 − slice_reserve) by weight from the first
    look; one broken tenant declared in the policy keeps its power live, however late it appears."""
    from gatekeeper.traffic.analysis import CRITICAL, SliceKey, allocate_live

    t = ShadowSettings(slice_weights={"tenant=acme": 3.0, "tenant=beta": 1.0}).thresholds()
    ms = frozenset(CRITICAL)
    late = allocate_live([(SliceKey("all", ""), ms), (SliceKey("tenant", "gamma"), ms), (SliceKey("tenant", "acme"), ms)],
                         t, ["all", "tenant=gamma", "tenant=acme"], 1)
    acme, gamma = late[(SliceKey("tenant", "acme"), "error")], late[(SliceKey("tenant", "gamma"), "error")]
    main = t.alpha * (1 - t.slice_reserve)
    assert acme == main * (1 - t.primary_share) / 2 * 3 / 4 / len(CRITICAL)
    assert gamma == t.alpha * t.slice_reserve / 2 / len(CRITICAL)  # discovered: the reserve's first share
    assert late[(SliceKey("all", ""), "disagreement")] == main * t.primary_share
    with pytest.raises(ValueError, match="customer=acme: a slice is dimension=value"):
        ShadowSettings(slice_weights={"customer=acme": 1.0})
