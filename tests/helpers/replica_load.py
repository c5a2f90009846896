"""Real `gatekeeper shadow` replicas under a steady client load, writing one PostgreSQL store:
the rig of the SIGKILL and database-restart tests (tests/live). Each replica mirrors every request
(`--sample 1`) to a scripted upstream that echoes the request's content, and commits batches of
FLUSH_PAIRS (no interval flush: a batch commits when full, or when the replica stops)."""

from __future__ import annotations

import json
import threading

import httpx
import psycopg

from live_util import live
from scripted_server import Reply, Request, chat_body

FLUSH_PAIRS, WORKERS, QUEUE, CLIENTS = 16, 2, 64, 3
PAUSE_S = 0.05  # between a client's requests: a steady load the mirror keeps up with on a busy 2-core machine
BOUND = FLUSH_PAIRS + QUEUE + WORKERS + CLIENTS


def upstream(req: Request) -> Reply:
    """The scripted upstream: a chat answer echoing the request's last message."""
    text = (req.body or {}).get("messages", [{}])[-1].get("content", "")
    return Reply.json(chat_body(f"echo: {text}"))


class Load:
    """CLIENTS threads sending requests to one proxy, one at a time each, until stopped or the
    proxy is gone; `answered` holds the contents the proxy answered with 200, `failed` counts the
    requests it did not (an error status, or the connection lost)."""

    def __init__(self, url: str, name: str) -> None:
        self.url, self.name = url, name
        self.answered: list[str] = []
        self.failed = 0
        self.stop = threading.Event()
        self._lock = threading.Lock()
        self.threads = [threading.Thread(target=self._run, args=(c,), daemon=True) for c in range(CLIENTS)]
        for t in self.threads:
            t.start()

    def _run(self, c: int) -> None:
        with httpx.Client(timeout=30) as client:
            i = 0
            while not self.stop.is_set():
                content = f"{self.name}-{c}-{i}"
                try:
                    r = client.post(self.url + "/v1/chat/completions",
                                    json={"model": "m", "messages": [{"role": "user", "content": content}], "temperature": 0})
                except httpx.HTTPError:
                    with self._lock:
                        self.failed += 1
                    return  # the proxy is gone
                with self._lock:
                    if r.status_code == 200:
                        self.answered.append(content)
                    else:
                        self.failed += 1
                i += 1
                self.stop.wait(PAUSE_S)

    def join(self) -> list[str]:
        """Stop the clients; the contents answered with 200."""
        self.stop.set()
        for t in self.threads:
            t.join(timeout=60)
        return list(self.answered)


def stored_contents(url: str) -> dict[str, list[str]]:
    """The stored pairs' contents per replica, in stored order."""
    with psycopg.connect(url) as db:
        rows = db.execute("SELECT replica, record FROM pairs ORDER BY seq").fetchall()
    out: dict[str, list[str]] = {}
    for replica, record in rows:
        out.setdefault(replica, []).append(json.loads(record)["request"]["messages"][-1]["content"])
    return out


def replica(up: str, url: str, name: str):  # noqa: ANN202 — live()'s context manager
    """A real replica named `name` mirroring to `up` and storing into `url`, in a process group of its own."""
    return live("shadow", "--primary", up, "--shadow", up, "--sample", "1", "--store", url, "--replica", name,
                "--flush-pairs", str(FLUSH_PAIRS), "--flush-interval", "3600", "--workers", str(WORKERS),
                "--queue", str(QUEUE), "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0", new_session=True)
