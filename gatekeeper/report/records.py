"""The raw per-check records: one JSON object per line, on disk the moment a check ends.

The runner opens a `RecordWriter` on `reports/<run>/records.jsonl` before the first gate and
writes every `CheckResult` as it is produced, flushed and fsynced, so a crash or a kill loses
at most the check in flight. Each line is one object: `"format": "gatekeeper.record/1"`, then
the check in its standalone form (serialise.py: summary.json's fields plus `gate` and `evidence`).
`read_records` reads the file back and ignores a torn last line.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any, Iterator

from gatekeeper.redact import NONE, Redactor
from gatekeeper.report.jsonable import dumps
from gatekeeper.report.serialise import check_json
from gatekeeper.results import CheckResult

RECORD_FORMAT = "gatekeeper.record/1"


class RecordWriter:
    """Append-only JSONL writer for check records; safe to call from several threads.

    Use as a context manager, or call `close()` when the run ends.
    """

    def __init__(self, path: Path | str, redactor: Redactor = NONE) -> None:
        self.path = Path(path)
        self._redact = redactor.text
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "a", encoding="utf-8")
        self._lock = threading.Lock()
        self.num_written = 0

    def write(self, check: CheckResult) -> None:
        """Append one check as a line and force it to disk before returning."""
        record = {"format": RECORD_FORMAT, **check_json(check, standalone=True)}
        line = self._redact(dumps(record))
        with self._lock:
            self._file.write(line + "\n")
            self._file.flush()
            os.fsync(self._file.fileno())
            self.num_written += 1

    def close(self) -> None:
        """Close the file (idempotent)."""
        with self._lock:
            if not self._file.closed:
                self._file.close()

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_records(path: Path | str) -> Iterator[dict[str, Any]]:
    """Yield the records in `path`, skipping a last line cut short by a crash."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.endswith("\n"):
                return  # torn write: the process died mid-line
            if line.strip():
                yield json.loads(line)

