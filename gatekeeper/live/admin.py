"""`/verdict` and `/metrics`: what a progressive-delivery controller reads from `gatekeeper shadow`.

They are served on their own address (`--admin`), never on the proxied one, so the primary's
own `/metrics` and every other path reach clients untouched.

- `GET /verdict`: always 200, the verdict JSON (`verdict.py`) with the mirror's counters, kept
  up to date from the pairs stored since the last look (`judgement.py`); `?recompute=1` judges
  every stored pair from scratch instead (the same JSON: a check, and the cost of a full look);
  Argo Rollouts' `web` provider (`successCondition: result.verdict == "PROMOTE"`,
  `failureCondition: result.verdict == "ROLLBACK"`; anything else is inconclusive).
- `GET /verdict/promote`: 200 only on PROMOTE (409 ROLLBACK, 425 HOLD): a gate that opens when
  the evidence is complete (Flagger `confirm-promotion` webhook).
- `GET /verdict/healthy`: 200 unless ROLLBACK (409): a check that fails only on a regression
  (Flagger `rollout` webhook, whose failures count towards the canary's threshold).
- `GET /verdict/rollback`: 200 only on ROLLBACK (412 otherwise): Flagger's `rollback` webhook,
  which rolls back on a 2xx.
- `GET /metrics`: Prometheus text (`gatekeeper_shadow_*`, each labelled with the replica: `metrics.py`).
- `GET /healthz` (or `/health`): always 200 while the process serves — a liveness probe must not
  restart a replica whose pairs wait for the database (a restart loses them) — its body "ok", or
  "degraded: ..." while the store's commits fail (pairs waiting, dropped, the error); alerts read
  `/metrics`' `store_degraded`.
- `GET /readyz`: 200 "ready" while the proxy accepts requests, 503 before it listens (this server
  starts first) and once it stopped accepting (SIGTERM: the mirror still drains): what a readiness
  probe or a load balancer's health check reads. A failing store does not make a replica unready:
  its clients are served all the same.
- `POST /verdict/reset`: clears a latched ROLLBACK (a ROLLBACK is sticky: later pairs do not undo
  it); the operator's decision, after the candidate was rolled back or the cause understood.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit
from typing import TYPE_CHECKING, Any

from gatekeeper.json_types import JsonObject
from gatekeeper.errors import GatekeeperError
from gatekeeper.live.policy import shadow_settings
from gatekeeper.live.judgement import LiveJudgement
from gatekeeper.live.metrics import prometheus_text
from gatekeeper.live.mirror import default_replica
from gatekeeper.live.verdict import judge_store

if TYPE_CHECKING:
    from gatekeeper.live.mirror import Counters, Mirror, MirrorConfig

STATUS = {"promote": {"PROMOTE": 200, "HOLD": 425, "ROLLBACK": 409}, "healthy": {"PROMOTE": 200, "HOLD": 200, "ROLLBACK": 409},
          "rollback": {"PROMOTE": 412, "HOLD": 412, "ROLLBACK": 200}}


class Judge:
    """The verdict over the store, brought up to date when pairs arrived and `interval` has passed."""

    def __init__(self, cfg: MirrorConfig, mirror: Mirror, counters: Counters) -> None:
        self.settings = shadow_settings(cfg.policy)
        self.cfg, self.mirror, self.counters = cfg, mirror, counters
        self.replica = cfg.replica or default_replica()  # as the mirror names itself (one process)
        self.live = LiveJudgement(mirror.store, self.settings, cfg.min_pairs)
        self._lock = threading.Lock()
        self._at, self._last, self._data = 0.0, -1, {}  # type: tuple[float, int, JsonObject]
        self._latch: JsonObject | None = None  # the latch the last look saw
        self._took = 0.0  # how long the last judgement took

    def recomputed(self) -> JsonObject:
        """`/verdict?recompute=1`: the verdict judged from scratch (every pair measured afresh,
        `judge_store`), with the mirror's counters; the carried state is left as it was."""
        with self._lock:
            data = judge_store(self.mirror.store, self.settings, self.cfg.min_pairs, sticky=True)
        data["mirror"] = self.mirror_counts()
        return data

    def current(self) -> JsonObject:
        """The verdict JSON, with the mirror's counters. A look measures only the pairs stored
        since the last one (`judgement.py`); it is taken only when pairs arrived, at most every
        `judge_interval_s` or five times the last look's duration (not the first look's: it
        measures the whole store, once) — or at once when the latch changed (another replica
        sharing the store latched a ROLLBACK or reset it)."""
        with self._lock:
            last, latch = self.mirror.store.last_seq(), self.mirror.store.latched()
            wait = max(self.cfg.judge_interval_s, 5 * self._took)
            if latch != self._latch or (last != self._last and time.monotonic() - self._at >= wait):
                t0, first = time.monotonic(), self.live.last == 0
                self._data = self.live.judge()
                self._at, self._last, self._latch = time.monotonic(), last, self.mirror.store.latched()
                self._took = 0.0 if first else self._at - t0  # the first look's cost is once, not every look's
            data = dict(self._data)
        data["mirror"] = self.mirror_counts()
        return data

    def mirror_counts(self) -> JsonObject:
        """This replica's counters: the mirror's and the store's (`Mirror.stats`) and the proxy's."""
        return {**self.mirror.stats, "sampled": self.counters.sampled.value, "dropped": self.counters.dropped.value,
                "forwarded": self.counters.forwarded.value}

    def metrics(self) -> bytes:
        """The figures in Prometheus text, labelled with this replica (`metrics.py`); the
        counters alone, degraded, when the store cannot be read."""
        try:
            data: JsonObject | None = self.current()
        except GatekeeperError:
            data = None
        return prometheus_text(self.replica, self.mirror_counts(), data)

    def health(self) -> str:
        """`/healthz`: "ok", or "degraded: ..." while the store's commits fail (pairs wait for a
        retry, the oldest beyond `--max-pending` dropped), from this replica's write counts alone:
        no database round trip, so a liveness probe never waits for the store."""
        w = self.mirror.store.write_stats()
        if w.failing is not None:
            return (f"degraded: the pair store is failing, {w.pending} pair(s) wait for a retry, {w.dropped} dropped "
                    f"unstored so far ({w.failing})\n")
        return "ok\n" if not w.dropped else f"ok ({w.dropped} pair(s) dropped unstored during an earlier outage)\n"

    def reset(self) -> JsonObject | None:
        """Clear a latched ROLLBACK and judge afresh at the next read; what was latched."""
        with self._lock:
            cleared = self.mirror.store.reset_latch()
            self._last = -1  # judge again, even without new pairs
            self._at = 0.0
        return cleared


def serve_admin(cfg: MirrorConfig, mirror: Mirror, counters: Counters) -> ThreadingHTTPServer:
    """Start the admin server in a thread; returns it (its port is `server_address[1]`)."""
    judge = Judge(cfg, mirror, counters)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 — quiet
            return

        def _send(self, status: int, body: bytes, ctype: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 — http.server's name
            path = self.path.split("?")[0].rstrip("/")
            try:
                if path == "/metrics":
                    self._send(200, judge.metrics(), "text/plain; version=0.0.4")
                elif path in ("/verdict", "/verdict/promote", "/verdict/healthy", "/verdict/rollback"):
                    query = parse_qs(urlsplit(self.path).query)
                    data = judge.recomputed() if query.get("recompute", ["0"])[-1] not in ("", "0", "false") else judge.current()
                    status = STATUS[path.rsplit("/", 1)[1]][str(data.get("verdict", "HOLD"))] if path != "/verdict" else 200
                    self._send(status, (json.dumps(data, indent=2) + "\n").encode(), "application/json")
                elif path in ("/healthz", "/health"):
                    self._send(200, judge.health().encode(), "text/plain")
                elif path == "/readyz":
                    ready = bool(counters.listening.value)
                    self._send(200 if ready else 503, b"ready\n" if ready else
                               b"not ready: the proxy is not accepting requests (starting, or stopping)\n", "text/plain")
                else:
                    self._send(404, b'{"error": "not found: /verdict[/promote|/healthy|/rollback], /metrics, /healthz, '
                               b'/readyz"}\n',
                               "application/json")
            except Exception as e:  # noqa: BLE001 — a judging failure is an answer, not a dead server
                self._send(500, json.dumps({"error": f"{type(e).__name__}: {e}"}).encode(), "application/json")

        def do_POST(self) -> None:  # noqa: N802 — http.server's name
            if self.path.split("?")[0].rstrip("/") != "/verdict/reset":
                self._send(404, b'{"error": "not found: POST /verdict/reset"}\n', "application/json")
                return
            cleared = judge.reset()
            self._send(200, (json.dumps({"reset": cleared is not None, "was": cleared}) + "\n").encode(), "application/json")

    server = ThreadingHTTPServer((cfg.admin_host, cfg.admin_port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
