"""What a recording endpoint notes about a request that failed: a short description of the request,
the lines the target's log gained while it was in flight, and how its previous answer went
(`errors.RequestFacts`).

A launched target's log is one file the watchdog appends to; its size when the request was sent
marks where the request's lines begin, so the lines after that mark are what the server printed
while (or just after) it failed — the traceback of a 500, the engine core's last words.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

MAX_LOG_LINES = 40  # the last ones kept when a request's window holds more
MAX_LOG_BYTES = 256 * 1024  # read at most this much of a window (a flooding server)


def log_mark(path: Path | None) -> int | None:
    """The log's size now (None: no log, or unreadable)."""
    if path is None:
        return None
    try:
        return os.stat(path).st_size
    except OSError:
        return None


def log_since(path: Path | None, mark: int | None) -> tuple[str, ...]:
    """The lines the log gained after `mark` (the last MAX_LOG_LINES; () without a log)."""
    if path is None or mark is None:
        return ()
    try:
        with open(path, "rb") as f:
            end = f.seek(0, os.SEEK_END)
            f.seek(max(mark, end - MAX_LOG_BYTES))
            text = f.read(end - f.tell()).decode("utf-8", errors="replace")
    except OSError:
        return ()
    return tuple(line for line in text.splitlines() if line.strip())[-MAX_LOG_LINES:]


def before(last: tuple[float, bool] | None, sent: float) -> str:
    """How the target's previous answer went, from (when it came, whether it was well) and when
    this request was sent (both monotonic seconds)."""
    if last is None:
        return "no earlier answer in this run"
    at, ok = last
    ago = max(0.0, sent - at)
    return (f"answered its previous request {ago:.1f} s before this one was sent" if ok else
            f"its previous request had failed too, {ago:.1f} s before this one was sent")


def _clip(text: str, n: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _content(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):  # content parts
        content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def describe(method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """A request in a few words: a chat's streaming, size and last message; a completion's prompt;
    any other method with its first argument."""
    if method == "chat" and args and isinstance(args[0], list):
        messages = [m for m in args[0] if isinstance(m, dict)]
        how = "streamed chat" if kwargs.get("stream") else "chat"
        last = messages[-1] if messages else {}
        tools = f", {len(kwargs['tools'])} tools" if kwargs.get("tools") else ""
        return (f"{how}, {len(messages)} messages{tools}, max_tokens {kwargs.get('max_tokens', 64)}; "
                f"last {last.get('role', '?')}: {_clip(_content(last))!r}")
    if method == "completion" and args:
        prompt = args[0]
        said = f"{len(prompt)} token ids" if isinstance(prompt, list) else repr(_clip(str(prompt)))
        return f"completion of {said}, max_tokens {kwargs.get('max_tokens', 16)}"
    if method == "tokenize" and len(args) == 2:
        text, messages = args
        return f"tokenize {len(messages)} messages" if isinstance(messages, list) else f"tokenize {_clip(str(text))!r}"
    return f"{method} {_clip(str(args[0])) if args else ''}".strip()
