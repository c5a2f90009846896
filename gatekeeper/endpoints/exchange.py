"""What one HTTP exchange's bytes and headers say, read at the client boundary: the server's error
message and the EndpointError a final status becomes, its Retry-After, the lines of an event
stream, and whether a connection closed before any byte of the answer (the kept-alive race: the
request may be sent again on a fresh one); and the URL a request goes to."""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx

from gatekeeper.endpoints.retry import TRANSIENT_STATUSES
from gatekeeper.errors import EndpointError


def status_error(url: str, r: httpx.Response, message: str, waited: float, retries: int, auth_hint: str) -> EndpointError:
    """The EndpointError for a final status >= 400 (after `retries` retries, `waited` seconds):
    `rate_limited`, `http` (saying how often a transient one was asked), `auth` (with `auth_hint`),
    `unsupported` (404/405/501) or `http`."""
    if r.status_code == 429:
        after = f" (still after {waited:.0f} s of retries)" if waited else ""
        return EndpointError("rate_limited", url, f"rate limited{after}: {message}", 429)
    if r.status_code in TRANSIENT_STATUSES:
        again = f" (still after {retries} retr{'y' if retries == 1 else 'ies'})" if retries else ""
        return EndpointError("http", url, message + again, r.status_code, retries_done=True)
    if r.status_code in (401, 403):
        return EndpointError("auth", url, f"{message} ({auth_hint})", r.status_code)
    kind = "unsupported" if r.status_code in (404, 405, 501) else "http"
    return EndpointError(kind, url, message, r.status_code)


def error_message(status: int, reason: str, body: bytes) -> str:
    """The server's error message: OpenAI's `error.message`, FastAPI's `detail` (validation
    errors as `loc: msg`), a bare `message`, else the body itself."""
    try:
        data = json.loads(body)
    except ValueError:
        return body[:300].decode("utf-8", "replace") or reason or f"HTTP {status}"
    msg: Any = data
    if isinstance(data, dict):
        if "error" in data:
            err = data["error"]
            msg = err.get("message") or err if isinstance(err, dict) else err
        elif isinstance(data.get("detail"), list):
            msg = "; ".join(f"{'.'.join(str(x) for x in d.get('loc', []))}: {d.get('msg')}" if isinstance(d, dict) else str(d)
                            for d in data["detail"])
        elif "detail" in data or "message" in data:
            msg = data.get("detail", data.get("message"))
    return str(msg)[:300]


def closed_before_answer(e: httpx.HTTPError) -> bool:
    """Whether the connection closed before any byte of the answer arrived: the request can be sent
    again on a fresh connection. httpcore says "Server disconnected without sending a response" for
    a kept-alive connection the server closed as the request went out; a reset or a broken pipe
    while sending (ReadError/WriteError before the status line) is the same race. A refused
    connection (ConnectError) is a server that is not there: not this."""
    if isinstance(e, httpx.RemoteProtocolError):
        return "without sending a response" in str(e)
    return isinstance(e, (httpx.ReadError, httpx.WriteError))


def retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def sse_lines(chunks: Iterator[bytes]) -> Iterator[str]:
    """SSE lines from byte chunks (a line may span chunks; CRLF or LF)."""
    buf = b""
    for chunk in chunks:
        buf += chunk
        *lines, buf = buf.split(b"\n")
        for line in lines:
            yield line.rstrip(b"\r").decode("utf-8", "replace")
    if buf:
        yield buf.rstrip(b"\r").decode("utf-8", "replace")


def without_userinfo(url: str) -> str:
    """`url` without `user:password@`: with an API key the key goes as Bearer, and httpx would
    otherwise send the userinfo as Basic auth instead (every request refused)."""
    parsed = httpx.URL(url.rstrip("/"))
    return str(parsed.copy_with(userinfo=b"")) if parsed.userinfo else url.rstrip("/")
