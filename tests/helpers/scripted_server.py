"""A real HTTP server on loopback that answers with scripted misbehaviour, for the client's
robustness tests: each request is handed to `handler(request) -> Reply`, and a Reply is a
status, headers and a body given as chunks written with pauses between them (a drip)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Reply:
    """What the server sends: `chunks` are written one by one, `pause_s` apart."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "application/json"})
    chunks: Iterable[bytes] = ()
    pause_s: float = 0.0
    drop: bool = False  # close the connection without a byte of answer (a kept-alive connection's race)

    @classmethod
    def dropped(cls) -> "Reply":
        """No answer at all: the server closes the connection as the request arrives."""
        return cls(drop=True)

    @classmethod
    def json(cls, body: object, status: int = 200, **headers: str) -> "Reply":
        """A JSON body in one piece."""
        return cls(status, {"content-type": "application/json", **headers}, [json.dumps(body).encode()])

    @classmethod
    def sse(cls, events: Iterable[str], pause_s: float = 0.0) -> "Reply":
        """An event stream: each item is written as it is (include the "data: " and blank lines)."""
        return cls(200, {"content-type": "text/event-stream"}, [e.encode() for e in events], pause_s)


@dataclass
class Request:
    """What the client sent."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict | None
    index: int  # 0 for the first request the server saw


def chat_body(content: object = "OK", model: str = "m", **extra: object) -> dict:
    """A chat completion body in OpenAI's shape (fields replaceable to make it wrong)."""
    body = {"id": "x", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}
    body.update(extra)
    return body


class _Handler(BaseHTTPRequestHandler):
    server: "_Server"
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # quiet
        pass

    def _serve(self, method: str) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length", 0) or 0))
        with self.server.lock:
            index = len(self.server.seen)
            req = Request(method, self.path, {k.lower(): v for k, v in self.headers.items()},
                          json.loads(raw) if raw else None, index)
            self.server.seen.append(req)
        reply = self.server.handler(req)
        if reply.drop:
            self.close_connection = True
            return
        self.send_response(reply.status)
        for k, v in reply.headers.items():
            self.send_header(k, v)
        self.send_header("connection", "close")
        self.end_headers()
        try:
            for i, chunk in enumerate(reply.chunks):
                if i and reply.pause_s:
                    time.sleep(reply.pause_s)
                self.wfile.write(chunk)
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client dropped the connection (what an oversize or a deadline does)
        self.close_connection = True

    def do_GET(self) -> None:  # noqa: N802
        self._serve("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._serve("POST")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, handler: Callable[[Request], Reply]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.handler = handler
        self.seen: list[Request] = []
        self.lock = threading.Lock()


@contextmanager
def scripted_server(handler: Callable[[Request], Reply]) -> Iterator[tuple[str, list[Request]]]:
    """Yield (base URL, the requests seen so far)."""
    srv = _Server(handler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}", srv.seen
    finally:
        srv.shutdown()
        srv.server_close()


def forever(chunk: bytes, limit: int = 400) -> Iterator[bytes]:
    """The same chunk again and again (bounded, so a broken client cannot hang the suite)."""
    for _ in range(limit):
        yield chunk
