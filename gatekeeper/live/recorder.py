"""The recording proxy's output: traffic records appended to a JSONL file, rotated by size.

Each record is one `write` of one whole line on a file opened for appending, flushed at once,
so a reader (or a proxy killed mid-load) never sees half a record from a finished exchange.
When the file reaches `rotate_bytes`, it is renamed `NAME.1.jsonl` (then `.2`, ...; the highest
number is the newest full segment) and a new `NAME.jsonl` begins.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from gatekeeper.traffic.format import TrafficRecord


class TrafficWriter:
    """Appends records to a traffic file, rotating it past `rotate_bytes` (0: never)."""

    def __init__(self, path: str | Path, rotate_bytes: int = 0) -> None:
        self.path = Path(path)
        self.rotate_bytes = rotate_bytes
        self.written = 0
        self._lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def _segment(self) -> Path:
        n = 1
        while self.path.with_name(f"{self.path.stem}.{n}{self.path.suffix}").exists():
            n += 1
        return self.path.with_name(f"{self.path.stem}.{n}{self.path.suffix}")

    def write(self, record: TrafficRecord) -> None:
        """Append one record (one line)."""
        line = (json.dumps(record.to_json(), ensure_ascii=False, sort_keys=True) + "\n").encode()
        with self._lock:
            os.write(self._fd, line)
            self.written += 1
            if self.rotate_bytes and os.fstat(self._fd).st_size >= self.rotate_bytes:
                os.close(self._fd)
                os.replace(self.path, self._segment())
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            os.close(self._fd)
