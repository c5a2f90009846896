"""The reference answer cache: gate several candidates against one reference, ask it each thing once.

Keyed by the reference's identity — the model it serves, the version it reports (`/version`), the
execution path declared for it and, for a target gatekeeper launches, how it is launched — and then
by the request and its occurrence number. A reference whose identity differs in anything (another
version, another declared dtype) gets another directory, so a stale answer is never used; a
reference that reports no version gets no cache at all (its identity is unknown).

Only answers are cached: chat, completions, tokenize and other POSTs, by the reference, in gates
that judge answers (`Gate.reference_cacheable`: not gate 1, which judges this launch, nor the
performance gate, which measures load and never goes through here). Failures are not cached — a
timeout, a 5xx, a refused key or a rate limit is asked again next time — but a refusal of the request
itself (a 4xx such as "context too long", or an unsupported feature) is the reference's answer. A
cached answer keeps the latencies measured when it was first given. New answers are written when
the run ends, atomically, one file per run under `<dir>/<identity>/`.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gatekeeper.json_types import JsonObject
from gatekeeper.errors import EndpointError
from gatekeeper.atomic import write_atomic
from gatekeeper.results import CacheUse
from gatekeeper.tape.endpoint import Asked
from gatekeeper.tape.key import ANSWERS

FORMAT = "gatekeeper.cached-answer/1"


@dataclass(frozen=True)
class Identity:
    """What makes two references the same for their answers."""

    model: str
    version: str
    declared: tuple[tuple[str, str], ...]
    launch: str | None  # how gatekeeper starts it (bundled / launch targets); None for a URL

    @property
    def digest(self) -> str:
        """The identity's directory name."""
        text = json.dumps([self.model, self.version, list(self.declared), self.launch])
        return hashlib.sha256(text.encode()).hexdigest()[:20]

    def describe(self) -> str:
        """One line for the console and the report."""
        path = ", ".join(f"{k}={v}" for k, v in self.declared) or "nothing declared"
        return f"model {self.model}, version {self.version}, declared {path}"


def version_of(get_json: Any) -> str | None:
    """The version a server reports at /version (vLLM, the bundled engine), or None."""
    try:
        data = get_json("/version")
    except EndpointError:
        return None
    version = data.get("version")
    return str(version) if isinstance(version, (str, int, float)) and str(version) else None


@dataclass
class CacheStats:
    """How the cache served this run so far: cacheable requests, and how many it answered."""

    identity: str
    requests: int = 0
    hits: int = 0
    stored: int = 0

    def frozen(self) -> CacheUse:
        """The counts as the run result carries them."""
        return CacheUse(self.identity, self.requests, self.hits, self.stored)


class AnswerCache:
    """The cache for one reference identity: a `Source` that may answer, and a `Sink` that stores."""

    def __init__(self, root: Path, identity: Identity, run_id: str) -> None:
        self.dir = root / identity.digest
        self.identity, self.run_id = identity, run_id
        self.entries: dict[tuple[str, int], JsonObject] = {}
        self.new: dict[tuple[str, int], JsonObject] = {}
        self.stats = CacheStats(identity.describe())
        self._lock = threading.Lock()
        for path in sorted(self.dir.glob("*.jsonl")):
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    r = json.loads(line)
                except ValueError:
                    continue  # a torn line: that entry is asked again
                if isinstance(r, dict) and r.get("format") == FORMAT:
                    self.entries.setdefault((r["key"], r["n"]), r["answer"])

    @staticmethod
    def cacheable(asked: Asked) -> bool:
        """A reference's answer, in a gate that judges answers."""
        return asked.role == "reference" and asked.cacheable and asked.method in ANSWERS

    def answer(self, asked: Asked) -> JsonObject | None:
        """The cached answer, counted as a hit, or None (a miss: the reference is asked)."""
        if not self.cacheable(asked):
            return None
        with self._lock:
            self.stats.requests += 1
            found = self.entries.get((asked.key, asked.occurrence))
            if found is not None:
                self.stats.hits += 1
            return found

    def must_answer(self) -> bool:
        """A cache may miss."""
        return False

    def keep(self, asked: Asked, answer: JsonObject, from_source: bool) -> None:
        """Store what the reference answered (not errors, not what the cache itself gave)."""
        if from_source or not self.cacheable(asked) or (answer.get("type") == "error" and not _refusal(answer)):
            return
        with self._lock:
            self.new[(asked.key, asked.occurrence)] = answer

    def save(self) -> None:
        """Write this run's new answers (one file, atomically) and the identity beside them."""
        with self._lock:
            new = dict(self.new)
        self.stats.stored = len(new)
        if not new:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        write_atomic(self.dir / "identity.json", json.dumps({"model": self.identity.model, "version": self.identity.version,
                                                             "declared": dict(self.identity.declared),
                                                             "launch": self.identity.launch}, indent=1) + "\n")
        write_atomic(self.dir / f"{self.run_id}.jsonl", "".join(
            json.dumps({"format": FORMAT, "key": key, "n": n, "answer": answer}) + "\n" for (key, n), answer in new.items()))


def _refusal(error: JsonObject) -> bool:
    """An error that is the reference's answer to the request itself (a 4xx other than auth, timeout, rate limit)."""
    status = error.get("status")
    return (error.get("kind") in ("http", "unsupported") and isinstance(status, int) and 400 <= status < 500
            and status not in (401, 403, 408, 429))
