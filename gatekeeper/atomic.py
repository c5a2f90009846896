"""Atomic file writes: a reader sees the old file or the whole new one, never half of it.

The content goes to a temporary file in the destination's own directory (so the final rename
stays on one filesystem), is flushed and fsynced, and then `os.replace`d over the target. If
anything fails before the rename, the temporary file is removed and the target is untouched.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from gatekeeper.text import utf8_safe


def _umask() -> int:
    """The process umask (read once: os.umask can only be read by setting it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# mkstemp creates 0600 files; reports are for sharing (CI artifacts, a web server), so they get
# the permissions an ordinary open() would give them.
_FILE_MODE = 0o666 & ~_umask()


def write_atomic(path: Path | str, data: str | bytes) -> Path:
    """Write `data` to `path` atomically and return the path.

    Text is encoded as UTF-8 (lone surrogates from model output become U+FFFD rather than an
    exception); bytes are written as they are. The parent directory must
    exist. On any exception the destination keeps its previous content (or stays absent).
    """
    path = Path(path)
    payload = utf8_safe(data).encode("utf-8") if isinstance(data, str) else data
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), _FILE_MODE)
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        raise
    _fsync_dir(path.parent)
    return path


def _fsync_dir(directory: Path) -> None:
    """Make the rename itself durable where the platform allows it (POSIX only)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
