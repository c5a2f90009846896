"""Two `gatekeeper shadow` replicas' admin servers (real HTTP on loopback) over one store — a
PostgreSQL database (a real server, tests/helpers/pg_server.py) and a SQLite file alike:

- the stateless `gatekeeper shadow verdict --store` (a real subprocess) prints the JSON each
  replica's `/verdict` gives over the same pairs, and so do `--recompute` and `/verdict?recompute=1`
  (every pair measured afresh) (the replicas' own `mirror` counters and the
  latch's time left out), and exits 2 on HOLD and 1 on ROLLBACK as `gatekeeper run` does;
- each replica's `/metrics` labels every sample with its own `--replica` name (host:pid when
  none is given), and counts its own pairs;
- a store that cannot be read is one line and exit 3, a URL's password masked."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from gatekeeper import exit_codes
from gatekeeper.live.admin import serve_admin
from gatekeeper.live.mirror import Counters, Mirror, MirrorConfig, Upstream
from gatekeeper.traffic.store import Batching
from paths import ROOT
from pg_server import PASSWORD, USER
from store_pairs import pair

MIN_PAIRS = 400


@pytest.fixture(params=["postgres", "sqlite"])
def store(request, tmp_path: Path) -> str:
    """One store both replicas share: a fresh PostgreSQL database, or a SQLite file."""
    return request.getfixturevalue("pg_url") if request.param == "postgres" else str(tmp_path / "shared.db")


@contextmanager
def replica(store: str, name: str | None) -> Iterator[tuple[Mirror, str]]:
    """A replica's mirror (its store writer) and its admin server's URL, on a free loopback port."""
    cfg = MirrorConfig(store=store, shadow=Upstream("http://127.0.0.1:9"), min_pairs=MIN_PAIRS, judge_interval_s=0.0, replica=name,
                       batching=Batching(8, 0.5))
    mirror = Mirror(cfg)
    server = serve_admin(cfg, mirror, Counters())
    try:
        yield mirror, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        mirror.store.close()


def shadow_verdict(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gatekeeper.cli", "shadow", "verdict", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def comparable(data: dict) -> dict:
    """The verdict without what is each process's own: the mirror counters, the latch's time."""
    data = {k: v for k, v in data.items() if k != "mirror"}
    if "latched" in data:
        data["latched"] = {k: v for k, v in data["latched"].items() if k != "at"}
    return data


def add(mirrors: list[Mirror], seed: int, first: int, n: int, bad: float) -> None:
    for i in range(first, first + n):  # the pairs spread over the replicas, as a load balancer spreads them
        mirrors[i % len(mirrors)].store.add(*pair(seed, i, bad=bad))
    for m in mirrors:
        m.store.flush()


@pytest.mark.slow  # ~17 s: out of the default suite's 15 minutes (CI runs it)
def test_shadow_verdict_is_every_replicas_verdict_and_exits_with_its_code(store: str):
    with replica(store, "a") as (a, a_url), replica(store, "b") as (b, b_url):
        add([a, b], 2, 0, 60, bad=0.0)  # clean so far: collecting
        for verdict, code, first in (("HOLD", exit_codes.HOLD, 60), ("ROLLBACK", exit_codes.ROLLBACK, 260)):
            if verdict == "ROLLBACK":
                add([a, b], 1, 60, 200, bad=0.3)  # beta's candidate breaks
            looks = [httpx.get(url + "/verdict", timeout=120).json() for url in (a_url, b_url)]
            out = shadow_verdict("--store", store, "--min-pairs", str(MIN_PAIRS), "--json")
            assert out.returncode == code, out.stderr
            data = json.loads(out.stdout)
            assert data["verdict"] == verdict and data["pairs"] == first and "mirror" not in data
            looks.append(httpx.get(b_url + "/verdict?recompute=1", timeout=120).json())  # every pair measured afresh
            again = shadow_verdict("--store", store, "--min-pairs", str(MIN_PAIRS), "--json", "--recompute")
            assert again.returncode == code, again.stderr
            looks.append(json.loads(again.stdout))
            for look in looks:
                assert json.dumps(comparable(look), sort_keys=True) == json.dumps(comparable(data), sort_keys=True)
        assert data["latched"]["judged"] == looks[0]["latched"]["judged"]  # the latch a replica wrote, read back
        readable = shadow_verdict("--store", store, "--min-pairs", str(MIN_PAIRS))
        assert readable.returncode == exit_codes.ROLLBACK, readable.stderr
        assert readable.stdout.startswith("ROLLBACK  ") and "fired: " in readable.stdout
        assert PASSWORD not in readable.stdout + readable.stderr
        if store.startswith("postgresql"):
            assert "store postgresql://***@127.0.0.1:" in readable.stdout


def test_each_replicas_metrics_carry_its_own_label(store: str):
    with replica(store, "eu-1") as (a, a_url), replica(store, "eu-2") as (b, b_url), replica(store, None) as (_, c_url):
        add([a, a, a, b], 2, 0, 40, bad=0.0)  # three of every four pairs through eu-1
        for url, name, stored in ((a_url, "eu-1", 30), (b_url, "eu-2", 10), (c_url, f"{socket.gethostname()}:{os.getpid()}", 0)):
            text = httpx.get(url + "/metrics", timeout=120).text
            samples = [s for family in text_string_to_metric_families(text) for s in family.samples]
            assert len(samples) > 20 and {s.labels.get("replica") for s in samples} == {name}, name
            value = {s.name: s.value for s in samples if len(s.labels) == 1}
            assert value["gatekeeper_shadow_stored_total"] == stored and value["gatekeeper_shadow_pending_pairs"] == 0
            assert value["gatekeeper_shadow_pairs_judged"] == 40  # the verdict's figures: the shared store's


def _one_line(p: subprocess.CompletedProcess, fragment: str) -> None:
    assert p.returncode == exit_codes.USAGE, (p.returncode, p.stderr)
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1 and fragment in p.stderr, p.stderr
    assert PASSWORD not in p.stderr + p.stdout
    if p.stdout:  # --json: the error as JSON too, for a CI step that parses stdout
        error = json.loads(p.stdout)
        assert error["format"] == "gatekeeper.error/1" and error["exit_code"] == exit_codes.USAGE


def test_a_store_that_cannot_be_read_is_one_line(tmp_path: Path):
    _one_line(shadow_verdict("--store", str(tmp_path / "none.db")), "not found")
    (tmp_path / "text.db").write_text("not a database\n")
    _one_line(shadow_verdict("--store", str(tmp_path / "text.db")), "not a pair store")
    _one_line(shadow_verdict("--store", f"postgresql://{USER}:{PASSWORD}@127.0.0.1:1/db"),
              "cannot open the pair store: ")
    as_json = shadow_verdict("--store", str(tmp_path / "none.db"), "--json")
    _one_line(as_json, "not found")
    assert as_json.stdout and not shadow_verdict("--store", str(tmp_path / "none.db")).stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["text.db"]  # nothing created
