"""The one writer every report page goes through: each file rendered in memory, then written atomically.

A page family renders all its files first — the run's five reports (run/files.py), the merged
matrix's (matrix/files.py), the selftest's, compare's and bisect's — and hands them here as
(name, text) pairs; `write_pages` writes each under the output directory with `atomic.write_atomic`
(a reader sees the old file or the whole new one; text as UTF-8), making the folders a name needs.
A renderer that raises has raised before anything touches the disk, so no page is half-written.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gatekeeper.atomic import write_atomic


def write_pages(out: Path, pages: Sequence[tuple[str, str]]) -> list[Path]:
    """Write each (name, text) of `pages` to `out / name` in order, atomically, making `out` and any
    folder in a name (e.g. "records/<cell>.yaml") if missing; returns the paths written, in order."""
    written = []
    for name, text in pages:
        path = Path(out) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        written.append(write_atomic(path, text))
    return written
