"""A `gatekeeper shadow` replica SIGKILLed mid-load, with real processes on loopback: two
replicas (`a` and `b`, each a real proxy with its mirror process) mirror every request of a
steady client load to a scripted upstream and write one real PostgreSQL store
(tests/helpers/pg_server.py) in batches of FLUSH_PAIRS (no interval flush: a batch commits when
full). Replica `a`'s whole process group (proxy and mirror) is SIGKILLed once it has committed
a few batches, as a node failure or the OOM killer would; `b` goes on, then stops cleanly.

Checked afterwards:
- no half-written pair: every stored row decodes (the read-only store reads each; the stateless
  `gatekeeper shadow verdict` judges them all), and `a`'s rows are whole batches (a multiple of
  FLUSH_PAIRS: a batch is one transaction, committed or not at all);
- every stored pair is a request a client sent and was answered, stored once;
- `a` lost at most the stated bound (docs/shadow-live.md): its unflushed batch (≤ FLUSH_PAIRS,
  a commit cut off included) plus the copies still on their way to it — queued (≤ QUEUE), being
  sent to the shadow (≤ WORKERS), answered but not yet queued (≤ CLIENTS);
- `b`, stopped cleanly, lost nothing: every answer its clients got is a stored pair (but the
  copies it dropped, counted, for a full queue: none at this load).

Copies a replica drops for a full queue (`dropped_total`, counted by design when the shadow is
slower than the traffic) are not what a SIGKILL loses: `a`'s count is read just before the kill
and left out of its loss."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import httpx
import pytest

from gatekeeper import exit_codes
from gatekeeper.traffic.store import open_store
from paths import ROOT
from replica_load import BOUND, FLUSH_PAIRS, Load, replica, stored_contents, upstream
from scripted_server import scripted_server


@pytest.mark.parametrize("seed", [1, 2])
def test_a_replica_sigkilled_mid_load_loses_at_most_its_unflushed_batch_and_never_half_a_pair(pg_url: str, seed: int):
    rng = random.Random(seed)
    with scripted_server(upstream) as (up, _), replica(up, pg_url, "a") as a, replica(up, pg_url, "b") as b:
        load_a, load_b = Load(a.url, "a"), Load(b.url, "b")
        deadline = time.monotonic() + 120
        while len(stored_contents(pg_url).get("a", [])) < 3 * FLUSH_PAIRS and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(rng.uniform(0.0, 0.5))  # somewhere inside a batch
        dropped_a = a.verdict()["mirror"]["dropped"]  # copies a dropped for a full queue (counted, by design)
        os.killpg(a.proc.pid, signal.SIGKILL)
        a.proc.wait(timeout=30)
        answered_a = load_a.join()
        time.sleep(1.0)  # b goes on alone
        answered_b = load_b.join()
        b_metrics = httpx.get(b.admin + "/verdict", timeout=120).json()["mirror"]
        assert b.stop() is not None and b.proc.returncode == 0  # SIGTERM: b drains its queue and commits its batch
    deadline = time.monotonic() + 10
    while _pids_in_group(a.proc.pid) and time.monotonic() < deadline:  # the mirror process went with the proxy
        time.sleep(0.1)
    assert not _pids_in_group(a.proc.pid)

    stored = stored_contents(pg_url)
    with open_store(pg_url, readonly=True) as store:  # every row decodes (a row that does not is a ConfigError)
        decoded = sum(1 for _ in store.rows())
        assert decoded == len(store) == sum(len(v) for v in stored.values())
    verdict = subprocess.run([sys.executable, "-m", "gatekeeper.cli", "shadow", "verdict", "--store", pg_url, "--json",
                              "--recompute"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert verdict.returncode in (exit_codes.PROMOTE, exit_codes.HOLD), verdict.stderr
    assert json.loads(verdict.stdout)["pairs"] == decoded

    kept_a, kept_b = stored["a"], stored["b"]
    assert len(kept_a) % FLUSH_PAIRS == 0 and len(kept_a) >= 3 * FLUSH_PAIRS  # whole batches only
    assert len(set(kept_a)) == len(kept_a) and set(kept_a) <= set(answered_a)  # answered requests, each once
    lost_a = len(answered_a) - dropped_a - len(kept_a)
    print(f"\na: {len(answered_a)} answered, {dropped_a} dropped for a full queue, {len(kept_a)} stored, {lost_a} lost "
          f"(bound {BOUND}); b: {len(answered_b)} answered, {b_metrics['dropped']} dropped, {len(kept_b)} stored")
    assert 0 <= lost_a <= BOUND
    assert len(set(kept_b)) == len(kept_b) and set(kept_b) <= set(answered_b)  # the other replica: nothing lost
    assert len(kept_b) == len(answered_b) - b_metrics["dropped"]


def _pids_in_group(pgid: int) -> list[int]:
    """Live processes of process group `pgid` (zombies left out)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                found.append(int(entry))
    return found
