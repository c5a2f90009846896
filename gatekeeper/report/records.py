"""The raw per-check records: one JSON object per line, on disk the moment a check ends.

The runner opens a `RecordWriter` on `reports/<run>/records.jsonl` before the first gate and
writes every `CheckResult` as it is produced, flushed and fsynced, so a crash or a kill loses
at most the check in flight. Each line is one object: `"format": "gatekeeper.record/1"`, then
the check in its standalone form (serialise.py: summary.json's fields plus `gate` and `evidence`).
When a gate ends, one `"format": "gatekeeper.gate/1"` line says so: its id, stage, title,
description, status, duration, whether it stopped the run, notes, coverage, and the requests it
made as `[target, e2e_s, ttft_s, output_tokens]` (what `gatekeeper run --resume` reuses, see
run_dir.py). `read_records` reads the file back and ignores a torn last line.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any, Iterator

from gatekeeper.json_types import JsonObject
from gatekeeper.redact import NONE, Redactor
from gatekeeper.report.jsonable import dumps
from gatekeeper.report.serialise import check_json, coverage_json, retry_json
from gatekeeper.results import CheckResult, GateResult, RequestTiming

RECORD_FORMAT = "gatekeeper.record/1"
GATE_FORMAT = "gatekeeper.gate/1"


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
        self._append({"format": RECORD_FORMAT, **check_json(check, standalone=True)})

    def write_gate(self, gate: GateResult, timings: list[RequestTiming]) -> None:
        """Append the line that says `gate` ended, with the requests it made."""
        self._append({"format": GATE_FORMAT, "id": gate.id, "stage": gate.stage, "title": gate.title,
                      "description": gate.description, "status": gate.status.value, "started_at": gate.started_at,
                      "duration_s": gate.duration_s,
                      "stopped_run": gate.stopped_run, "notes": list(gate.notes),
                      "retries": [retry_json(c) for c in gate.retries],
                      "coverage": None if gate.coverage is None else coverage_json(gate.coverage),
                      "excluded": gate.excluded,
                      "timings": [[t.target, t.e2e_s, t.ttft_s, t.output_tokens] for t in timings]})

    def _append(self, record: JsonObject) -> None:
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

