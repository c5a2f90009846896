"""A run's answers on disk: `answers/<role>.jsonl` in the run directory, one line per request.

Written as the answers come (a crash loses nothing already answered), read back by
`gatekeeper rejudge` as the `Source` that answers every request the run made. Also here: what the
runner knew about each target besides its answers (`answers/targets.json`: how it started, its log,
its declared path) and whether each target still answered after each gate (`answers/liveness.jsonl`).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from collections.abc import Callable
from typing import IO, Any

from gatekeeper.json_types import JsonObject
from gatekeeper.atomic import write_atomic
from gatekeeper.tape.endpoint import Asked

FORMAT = "gatekeeper.answer/1"
DIR = "answers"
TARGETS = "targets.json"
LIVENESS = "liveness.jsonl"


class Recorder:
    """The run's sink: every answer each role gave (or the error it raised), in order. Every line
    passes through `redact` as it is written (a log line or an error naming a key never reaches the
    disk, even if the run then crashes before its last sweep)."""

    def __init__(self, run_dir: Path, redact: Callable[[str], str] = lambda text: text) -> None:
        self.dir = run_dir / DIR
        self.dir.mkdir(parents=True, exist_ok=True)
        self.redact = redact
        self._files: dict[str, IO[str]] = {}
        self._lock = threading.Lock()

    def keep(self, asked: Asked, answer: JsonObject, from_source: bool) -> None:
        """Append the answer to the role's file."""
        line = self.redact(json.dumps({"format": FORMAT, "role": asked.role, "gate": asked.gate, "method": asked.method,
                                       "key": asked.key, "n": asked.occurrence, "cached": from_source,
                                       "answer": answer})) + "\n"
        with self._lock:
            f = self._files.get(asked.role)
            if f is None:
                f = self._files[asked.role] = (self.dir / f"{_safe(asked.role)}.jsonl").open("a", encoding="utf-8")
            f.write(line)
            f.flush()

    def liveness(self, gate: str, after: JsonObject) -> None:
        """Each target's state after `gate` (gatekeeper/run/liveness.py's recorded form): whether it
        still answered, its process was alive, a stopped candidate's log tail, a dead engine."""
        with self._lock, (self.dir / LIVENESS).open("a", encoding="utf-8") as f:
            f.write(self.redact(json.dumps({"gate": gate, **after})) + "\n")

    def targets(self, described: JsonObject) -> None:
        """What the runner knew about each started target."""
        write_atomic(self.dir / TARGETS, self.redact(json.dumps(described, indent=1)) + "\n")

    def close(self) -> None:
        """Close the files."""
        with self._lock:
            for f in self._files.values():
                f.close()
            self._files.clear()


class Recorded:
    """A finished run's answers, as a `Source` that must answer every request (a replay)."""

    def __init__(self, run_dir: Path) -> None:
        self.dir = run_dir / DIR
        self.answers: dict[tuple[str, str, int], JsonObject] = {}
        for path in sorted(self.dir.glob("*.jsonl")):
            if path.name == LIVENESS:
                continue
            for line in path.read_text(encoding="utf-8").splitlines():
                if not line.strip():
                    continue
                r = json.loads(line)
                if r.get("format") == FORMAT:
                    self.answers[(r["role"], r["key"], r["n"])] = r["answer"]
        self.liveness: dict[str, dict[str, Any]] = {}
        if (self.dir / LIVENESS).exists():
            for line in (self.dir / LIVENESS).read_text(encoding="utf-8").splitlines():
                if line.strip():
                    r = json.loads(line)
                    self.liveness[r["gate"]] = r
        self.targets: dict[str, Any] = json.loads((self.dir / TARGETS).read_text(encoding="utf-8"))

    def answer(self, asked: Asked) -> JsonObject | None:
        """The recorded answer to the same request, the same occurrence, by the same role."""
        return self.answers.get((asked.role, asked.key, asked.occurrence))

    def must_answer(self) -> bool:
        """A replay never asks a server."""
        return True


def _safe(role: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in role)
