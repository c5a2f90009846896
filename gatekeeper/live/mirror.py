"""The mirror: a separate process that takes sampled exchanges off a bounded queue, sends each
request to the shadow (the candidate) and to the reference replica (the twin, the noise floor),
measures nothing itself and commits the pair to the store; it also serves `/verdict` and
`/metrics` (`admin.py`).

It is a process of its own so that sending, parsing and judging never take the proxy's CPU
(on two cores, a thread would hold the GIL against the client's requests). When it is slow or
gone, the queue fills and the proxy drops mirror copies — counted, never the client's request.

In proxy mode the reference answer is the primary's (captured by the proxy); in mirror-sink
mode there is none, so the request goes to the replica twice (reference and twin; to a second
replica when one is given).
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import queue as queue_mod
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx

from gatekeeper.json_types import JsonObject
from gatekeeper.traffic.answers import Answer
from gatekeeper.live.capture import Exchange, answer_of_exchange, to_record
from gatekeeper.live.redaction import PII_DEFAULTS, BodyRedactor
from gatekeeper.traffic.store import Batching, open_store

STOP = None  # the queue's sentinel


@dataclass(frozen=True)
class Upstream:
    """A server the mirror sends to: its base URL, the model id to put in requests (empty: the
    request's own), and its API key (read from the environment by the parent, never logged)."""

    url: str
    model: str = ""
    api_key: str | None = None

    def __repr__(self) -> str:  # no key in any repr
        return f"Upstream({self.url!r}, model={self.model!r})"


@dataclass(frozen=True, kw_only=True)
class MirrorConfig:
    """What the mirror process needs (picklable: it crosses the process boundary)."""

    store: str
    shadow: Upstream
    replicas: tuple[Upstream, ...] = ()
    sink: bool = False
    tenant_header: str | None = None
    session_header: str | None = None
    pii: tuple[str, ...] = PII_DEFAULTS
    workers: int = 4
    timeout_s: float = 120.0
    admin_host: str = "127.0.0.1"
    admin_port: int = 0
    policy: str = "gates/default.yaml"
    min_pairs: int | None = None
    judge_interval_s: float = 2.0
    replica: str | None = None  # this proxy's name: its pairs' in a shared store, its /metrics label [default_replica()]
    batching: Batching = Batching()


def default_replica() -> str:
    """The name a proxy goes by when `--replica` is not given: host name and process id, unique
    among the replicas of one host (in Kubernetes the host name is the pod's)."""
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass
class Counters:
    """Counters shared with the proxy process (multiprocessing values)."""

    sampled: Any = field(default_factory=lambda: mp.Value("q", 0))
    dropped: Any = field(default_factory=lambda: mp.Value("q", 0))
    forwarded: Any = field(default_factory=lambda: mp.Value("q", 0))
    admin_port: Any = field(default_factory=lambda: mp.Value("i", 0))
    mirrored: Any = field(default_factory=lambda: mp.Value("q", 0))  # copies the mirror finished (stored or not)
    closed: Any = field(default_factory=lambda: mp.Value("i", 0))  # 1 once the mirror closed its store at the end
    listening: Any = field(default_factory=lambda: mp.Value("i", 0))  # 1 while the proxy accepts requests (`/readyz`)


def offer(q: Any, counters: Counters, ex: Exchange) -> bool:
    """Put one exchange on the mirror queue without waiting; a full queue drops it (counted)."""
    with counters.sampled.get_lock():
        counters.sampled.value += 1
    try:
        q.put_nowait(ex)
        return True
    except queue_mod.Full:
        with counters.dropped.get_lock():
            counters.dropped.value += 1
        return False


def send(client: httpx.Client, up: Upstream, ex: Exchange, timeout_s: float) -> Answer:
    """The client's request, as it sent it (the model id swapped when `up.model` is set), to one
    upstream; its answer as gate 5 measures it."""
    body = ex.request_json() or {}
    if up.model:
        body = {**body, "model": up.model}
    headers = {"Content-Type": "application/json"}
    if up.api_key:
        headers["Authorization"] = f"Bearer {up.api_key}"
    out = Exchange(ex.method, ex.path, {}, b"")
    t0 = time.perf_counter()
    try:
        with client.stream("POST", up.url + ex.path, content=json.dumps(body).encode(), headers=headers,
                           timeout=timeout_s) as r:
            out.status, out.content_type = r.status_code, r.headers.get("content-type", "")
            chunks = []
            for chunk in r.iter_bytes():
                if out.ttft_s is None:
                    out.ttft_s = time.perf_counter() - t0
                chunks.append(chunk)
            out.answer = b"".join(chunks)
    except httpx.TimeoutException as e:
        out.error = f"timeout: {type(e).__name__}"
    except httpx.HTTPError as e:
        out.error = f"connect: {type(e).__name__}: {e}"
    out.e2e_s = time.perf_counter() - t0
    return answer_of_exchange(out)


class Mirror:
    """The mirror process's work: pairs from exchanges, into the store."""

    def __init__(self, cfg: MirrorConfig) -> None:
        self.cfg = cfg
        self.replica = cfg.replica or default_replica()
        self.store = open_store(cfg.store, replica=self.replica, batching=cfg.batching)
        self.redact = BodyRedactor(cfg.pii, [u.api_key for u in (cfg.shadow, *cfg.replicas) if u.api_key])
        self.client = httpx.Client(limits=httpx.Limits(max_connections=4 * cfg.workers + 4))
        self.pool = ThreadPoolExecutor(max_workers=2 * cfg.workers + 2)
        self._counts = {"not_recordable": 0, "mirror_errors": 0}
        self._lock = threading.Lock()

    @property
    def stats(self) -> JsonObject:
        """The mirror's counts and the store's (`PairStore.write_stats`): `stored` counts pairs
        committed, never those still buffered (`pending`) or dropped unstored (`store_dropped`);
        `store_failing` names the error while commits fail."""
        w = self.store.write_stats()
        with self._lock:
            counts = dict(self._counts)
        return {"stored": w.stored, **counts, "duplicate": w.duplicates, "pending": w.pending,
                "store_dropped": w.dropped, "store_failing": w.failing}

    def _count(self, key: str) -> None:
        with self._lock:
            self._counts[key] += 1

    def _redacted(self, a: Answer) -> Answer:
        return Answer.from_dict(self.redact.value(a.to_dict()))

    def handle(self, ex: Exchange) -> None:
        """One exchange: send it, pair the answers, store the pair."""
        record = to_record(ex, self.cfg.tenant_header, self.redact, with_response=False,
                           session_header=self.cfg.session_header)
        if record is None:
            self._count("not_recordable")
            return
        t = self.cfg.timeout_s
        cand_f = self.pool.submit(send, self.client, self.cfg.shadow, ex, t)
        replicas = self.cfg.replicas
        if self.cfg.sink:
            ref_f = self.pool.submit(send, self.client, replicas[0], ex, t)
            twin = send(self.client, replicas[-1], ex, t) if replicas else None  # a second answer: the noise floor
            reference = ref_f.result()
        else:
            reference = answer_of_exchange(ex)
            twin = send(self.client, replicas[0], ex, t) if replicas else None
        candidate = cand_f.result()
        if candidate.failed:
            self._count("mirror_errors")
        self.store.add(record, self._redacted(reference), self._redacted(candidate),
                       self._redacted(twin) if twin is not None else None)  # counted by the store

    def work(self, q: Any, finished: Any | None = None) -> None:
        """A worker thread: exchanges until the sentinel; `finished` (a shared counter) counts
        each exchange done with, stored or not."""
        while True:
            ex = q.get()
            if ex is STOP:
                try:
                    q.put_nowait(STOP)  # for the next worker
                except queue_mod.Full:
                    pass
                return
            try:
                self.handle(ex)
            except Exception:  # noqa: BLE001 — one bad exchange must not stop the mirror
                self._count("mirror_errors")
            if finished is not None:
                with finished.get_lock():
                    finished.value += 1

