"""A real HTTP proxy in front of a real bundled server that misbehaves on purpose, for the
transport-fault tests: HTTP 500s, malformed JSON, hangs, cut streams, or dying mid-run.

GETs (health, models, version) always pass through, so the target looks healthy at startup, as
a broken production server does; POSTs misbehave per `mode` once `after` of them have passed
("pass" never misbehaves; "no_stream_finish" passes everything but sends `finish_reason: null` in
every streamed event, as some real servers do; "rate_limit_first" answers each distinct POST body
429 with `Retry-After` the first time and passes it on the retry; "unavailable_first" answers each
distinct POST body 503 without `Retry-After` the first time, as an overloaded proxy does, and
passes it on after; "unavailable_each_once" answers every POST 503 once: a body is answered 503
unless its last arrival was (so each send, a twin's repeat of a request included, costs one retry
on either side alike); "engine_dead" is vLLM after its engine core died (see fault_proxy's
docstring); "rate_limit" answers every POST
429 with `Retry-After: 1`; "unavailable_random" answers any request, GET or POST, 503 without
`Retry-After` with probability `rate`, drawn from a generator seeded with `seed`, as a real server
behind an overloaded balancer does now and then). With `record`, every request's (method, path,
body) is appended to it; with `injected`, the (method, path) of every request unavailable_random
answered 503; with `rewrite`, every non-streamed JSON answer is passed through it first; with
`version`, GET /version reports that version instead of the upstream's (an upgraded server).
"""

from __future__ import annotations

import json
import random
import re
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator

import httpx


_ENGINE_DEAD = (b'{"error": {"message": "EngineCore encountered an issue. See stack trace (above) for the root cause.", '
                b'"type": "InternalServerError", "param": null, "code": 500}}')
_UNAVAILABLE = b'{"error": {"message": "upstream overloaded", "type": "ServiceUnavailable", "code": 503}}'


class _Handler(BaseHTTPRequestHandler):
    server: "_ProxyServer"

    def log_message(self, *args) -> None:  # quiet
        pass

    def _forward(self, method: str, body: bytes | None) -> None:
        rewrite = self.server.rewrite
        if rewrite is not None and method == "POST" and b'"stream": true' not in (body or b"").replace(b'"stream":true', b'"stream": true'):
            with httpx.Client(timeout=120) as http:
                r = http.post(self.server.upstream + self.path, content=body,
                              headers={"content-type": self.headers.get("content-type", "application/json")})
            sent = json.loads(body or b"{}") if self.server.rewrite_sees_request else None
            out = (json.dumps(rewrite(self.path, r.json(), sent) if sent is not None else rewrite(self.path, r.json())).encode()
                   if r.status_code == 200 else r.content)
            self._reply(r.status_code, out)
            return
        with httpx.Client(timeout=120) as http:
            with http.stream(method, self.server.upstream + self.path, content=body,
                             headers={"content-type": self.headers.get("content-type", "application/json")}) as r:
                self.send_response(r.status_code)
                self.send_header("content-type", r.headers.get("content-type", "application/json"))
                self.end_headers()
                if self.server.mode == "no_stream_finish" and "event-stream" in r.headers.get("content-type", ""):
                    self.wfile.write(re.sub(rb'"finish_reason": ?"[a-z_]+"', b'"finish_reason": null', r.read()))
                    return
                if self.server.mode == "cut_streams" and "event-stream" in r.headers.get("content-type", "") and self._cut_now():
                    first = r.read().split(b"\n\n", 1)[0]
                    self.wfile.write(first + b"\n\ndata: [DONE]\n\n")  # llama-cpp-python's interrupt_requests
                    return
                events = 0
                for chunk in r.iter_raw():
                    self.wfile.write(chunk)
                    self.wfile.flush()
                    events += chunk.count(b"data:")
                    if self.server.mode == "cut_stream" and self.server.misbehaving and events >= self.server.cut_after:
                        return  # drop the connection mid-stream

    def _cut_now(self) -> bool:
        """In mode cut_streams: whether this stream is cut (the share `rate` of streams, exactly: the
        i-th is cut when floor(i * rate) steps up; which requests are cut depends on arrival order)."""
        srv = self.server
        with srv.lock:
            srv.streams += 1
            hit = int(srv.streams * srv.rate) > int((srv.streams - 1) * srv.rate)
            if hit:
                srv.injected.append(("POST", self.path))
        return hit

    def _unavailable_now(self, method: str) -> bool:
        """In mode unavailable_random: whether this request draws a 503 (counted in `injected`)."""
        srv = self.server
        if srv.mode != "unavailable_random":
            return False
        with srv.lock:
            hit = srv.rng.random() < srv.rate
            if hit:
                srv.injected.append((method, self.path))
        return hit

    def do_GET(self) -> None:  # noqa: N802
        with self.server.lock:
            self.server.record.append(("GET", self.path, b""))
        if self._unavailable_now("GET"):
            self._reply(503, _UNAVAILABLE)
            return
        if self.server.version is not None and self.path.startswith("/version"):
            self._reply(200, json.dumps({"version": self.server.version}).encode())
            return
        if (self.server.mode == "engine_dead" and self.server.misbehaving or self.server.dead) and self.path.startswith("/health"):
            self._reply(503, b"")
            return
        if self.server.mode == "no_health" and self.path.startswith("/health"):
            self._reply(404, b'{"detail": "Not Found"}')
            return
        self._forward("GET", None)

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        srv = self.server
        with srv.lock:
            repeat = srv.mode in ("fail_repeats", "rate_limit_first", "unavailable_first") and any(
                m == "POST" and b == body for m, _, b in srv.record)
            srv.record.append(("POST", self.path, body))
            srv.posts += 1
            srv.misbehaving = srv.posts > srv.after and srv.mode not in ("pass", "no_stream_finish", "no_health",
                                                                         "unavailable_random", "no_tokenize",
                                                                         "cut_streams", "reject_json_schema")
            if srv.mode == "fail_repeats":  # a request sent before, byte for byte, fails: the second pass
                srv.misbehaving = repeat
            if srv.mode in ("rate_limit_first", "unavailable_first"):  # a body seen before is a retry: let it through
                srv.misbehaving = not repeat
            if srv.mode == "unavailable_each_once":  # the retry of a 503 passes; the next send of it is answered 503 again
                srv.misbehaving = body not in srv.failed_once
                if srv.misbehaving:
                    srv.failed_once.add(body)
                else:
                    srv.failed_once.discard(body)
            if srv.mode == "seeded_batch_dies":  # vLLM 0.31/0.32 on CPU: a seeded request beside others kills the engine
                srv.dead = srv.dead or (b'"seed"' in body and srv.inflight > 0)
                srv.misbehaving = srv.dead
            counted = not srv.misbehaving
            srv.inflight += counted
            once = srv.fail_once is not None and not srv.failed_the_one and srv.fail_once(body)
            srv.failed_the_one = srv.failed_the_one or once
        if once:  # the one request `fail_once` picked: an HTTP 500 the client does not retry
            with srv.lock:
                srv.inflight -= counted
            self._reply(500, b'{"error": {"message": "internal error", "type": "InternalServerError", "code": 500}}')
            return
        if self._unavailable_now("POST"):
            self._reply(503, _UNAVAILABLE)
            return
        if srv.mode == "no_tokenize" and self.path.startswith("/tokenize"):
            self._reply(404, b'{"detail": "Not Found"}')
            return
        if srv.mode == "reject_json_schema" and _asks_json_schema(body):
            self._reply(500, _json_schema_rejected(srv.server_address[1]))
            return
        if not srv.misbehaving or srv.mode == "cut_stream":
            try:
                self._forward("POST", body)
            finally:
                with srv.lock:
                    srv.inflight -= counted
            return
        if srv.mode in ("unavailable_first", "unavailable_each_once", "http503"):
            self._reply(503, _UNAVAILABLE)
        elif srv.mode in ("engine_dead", "seeded_batch_dies"):
            self._reply(500, _ENGINE_DEAD)
        elif srv.mode in ("http500", "fail_repeats"):
            self._reply(500, b'{"error": {"message": "internal error", "type": "InternalServerError", "code": 500}}')
        elif srv.mode in ("rate_limit", "rate_limit_first"):
            self.send_response(429)
            body = b'{"error": {"message": "rate limit exceeded", "type": "RateLimitError", "code": 429}}'
            self.send_header("retry-after", "1" if srv.mode == "rate_limit" else "0.05")
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif srv.mode == "malformed":
            self._reply(200, b'{"choices": [{"message": ')
        elif srv.mode == "timeout":
            time.sleep(srv.hang_s)
            self._reply(200, b"{}")
        elif srv.mode == "die":
            threading.Thread(target=srv.die, daemon=True).start()
            self.connection.close()

    def _reply(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _asks_json_schema(body: bytes) -> bool:
    """Whether a request body asks for `response_format: {"type": "json_schema", ...}`."""
    try:
        fmt = json.loads(body).get("response_format")
    except (ValueError, AttributeError):
        return False
    return isinstance(fmt, dict) and fmt.get("type") == "json_schema"


def _json_schema_rejected(port: int) -> bytes:
    """llama-cpp-python's answer to `response_format: json_schema` (its pydantic model knows only text
    and json_object): HTTP 500 with the validation error and where it was raised, a path that differs
    from one install (here: one proxy) to another."""
    message = ("1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': "
               "\"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}\n\n  File "
               f"\"/srv/llama-{port}/lib/python3.11/site-packages/llama_cpp/server/app.py\", line 376, in "
               "create_chat_completion\n    POST /v1/chat/completions")
    return json.dumps({"error": {"message": message, "type": "internal_server_error", "param": None, "code": None}}).encode()


class _ProxyServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, upstream: str, mode: str, after: int, hang_s: float, record: list | None = None,
                 rewrite: Callable[[str, dict], dict] | None = None, rate: float = 0.0, seed: int | str = 0,
                 injected: list | None = None, port: int = 0, version: str | None = None,
                 rewrite_sees_request: bool = False, fail_once: Callable[[bytes], bool] | None = None,
                 cut_after: int = 1) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.cut_after = cut_after
        self.fail_once, self.failed_the_one = fail_once, False
        self.rewrite_sees_request = rewrite_sees_request
        self.version = version
        self.upstream, self.mode, self.after, self.hang_s = upstream, mode, after, hang_s
        self.rewrite = rewrite
        self.record: list = record if record is not None else []
        self.rate, self.rng = rate, random.Random(seed)
        self.injected: list = injected if injected is not None else []
        self.posts = 0
        self.inflight = 0  # POSTs being forwarded now
        self.dead = False  # seeded_batch_dies: the engine died
        self.failed_once: set[bytes] = set()  # unavailable_each_once: bodies whose last arrival was answered 503
        self.streams = 0
        self.misbehaving = False
        self.lock = threading.Lock()

    def die(self) -> None:
        """Stop serving and close the listening socket: later connects are refused."""
        self.shutdown()
        self.server_close()


@contextmanager
def fault_proxy(upstream: str, mode: str, after: int = 0, hang_s: float = 5.0,
                record: list | None = None, rewrite: Callable[[str, dict], dict] | None = None, *,
                rate: float = 0.0, seed: int | str = 0, injected: list | None = None, port: int = 0,
                version: str | None = None, rewrite_sees_request: bool = False,
                fail_once: Callable[[bytes], bool] | None = None, cut_after: int = 1) -> Iterator[str]:
    """Yield the proxy's base URL; `mode` is pass, http500, malformed, timeout, cut_stream, die,
    fail_repeats (HTTP 500 for a POST whose body was sent before), no_stream_finish, rate_limit_first,
    unavailable_first, http503 (every POST), unavailable_random (a 503 on a seeded share `rate` of all
    requests, each appended to `injected`), rate_limit, no_health (GET /health answers 404, everything
    else passes), no_tokenize (POST /tokenize answers 404, everything else passes), cut_streams (the share `rate` of
    streamed answers ends after its first event with `data: [DONE]` and no finish_reason, as llama-cpp-python's
    server does to the stream it serves when another request waits; each appended to `injected`) or
    reject_json_schema (a request with `response_format: json_schema` answers 500 with llama-cpp-python's validation
    message and a traceback path naming the proxy's port); `rewrite(path, body)`
    edits every non-streamed JSON answer (`rewrite(path, body, request)` with `rewrite_sees_request`:
    the request's JSON too); seeded_batch_dies (a POST carrying `seed` while another is in flight
    kills the "engine": it and every later POST answer 500, GET /health 503, as vLLM 0.31/0.32's CPU engine does
    on a seeded request split by chunked prefill); engine_dead (after `after` POSTs, every POST answers 500 as vLLM's
    API server does once its engine core died, and GET /health 503) (a server that differs, for real); `port` 0 lets the OS choose.
    With `fail_once(body)`, the first POST whose body it accepts answers HTTP 500 (one failed request, whatever the mode).
    `cut_after`: in cut_stream mode, the connection drops once that many SSE events have passed."""
    srv = _ProxyServer(upstream, mode, after, hang_s, record, rewrite, rate, seed, injected, port, version,
                       rewrite_sees_request, fail_once, cut_after)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()
