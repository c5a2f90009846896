"""Content digests: a plan's fingerprint (run_dir.py) and a cache identity's weights hash."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path


def digest(chunks: Iterable[bytes]) -> str:
    """A short hash over byte chunks, each length-prefixed (so no two splits collide)."""
    h = hashlib.sha256()
    for chunk in chunks:
        h.update(len(chunk).to_bytes(8, "little"))
        h.update(chunk)
    return h.hexdigest()[:16]


def files_digest(paths: Iterable[Path]) -> str:
    """One short hash over files' names and contents (directories walked in order): the
    fingerprint of a plan's files and the identity of bundled weights in the reference cache."""
    def chunks() -> Iterable[bytes]:
        for path in paths:
            for f in sorted(path.rglob("*")) if path.is_dir() else [path]:
                if f.is_file() and "__pycache__" not in f.parts:
                    yield str(f.relative_to(path) if path.is_dir() else f.name).encode()
                    yield f.read_bytes()
    return digest(chunks())
