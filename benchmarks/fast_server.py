"""A minimal, fast OpenAI-compatible streaming server, for measuring load generators (not engines).

    python benchmarks/fast_server.py [--port 0] [--chunks 16] [--delay-ms 0] [--ttft-ms D] [--no-usage] [--no-done]

It answers `POST /v1/completions` and `/v1/chat/completions` with a stream of one-token chunks
(as many as the body's `max_tokens`, else `--chunks`), a final chunk with `finish_reason`, a
usage chunk and `data: [DONE]`; `GET /v1/models` and `/health`. Any model name is accepted. The
first line on stdout is `listening on http://127.0.0.1:PORT` (`--port 0`: the OS picks one).
`GET /stats` counts the connections accepted and the requests answered so far.

It is built not to be the bottleneck: raw asyncio streams (uvloop when installed), HTTP/1.1
keep-alive with chunked transfer, and every token chunk pre-encoded once per (endpoint, model).
`--delay-ms` sleeps before each token chunk (`--ttft-ms` before the first), so requests have a
realistic duration. For tests, a request body may override the server's behaviour:
`x_delay_ms`, `x_ttft_ms`, `x_tokens_per_chunk` (usage then reports that many tokens per chunk),
`x_usage` / `x_done` (false: no usage chunk / no `[DONE]`) and `x_fault`: `"400"` or `"500"`
(an OpenAI-shaped error answer), `"drop"` (the connection is cut after two chunks) or `"garbage"`
(an event that is not JSON after two chunks, then the stream ends as usual).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import dataclass
from typing import Any

CHAT = "/v1/chat/completions"
COMPLETIONS = "/v1/completions"
DONE = b"data: [DONE]\n\n"
END = b"0\r\n\r\n"  # the last chunk of a chunked body
STREAM_HEAD = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
               b"transfer-encoding: chunked\r\n\r\n")


@dataclass(frozen=True)
class Behaviour:
    """How the server answers when a request does not say otherwise."""

    chunks: int = 16
    delay_s: float = 0.0
    ttft_s: float | None = None  # None: same as delay_s
    usage: bool = True
    done: bool = True


def frame(payload: bytes) -> bytes:
    """One chunk of a chunked HTTP body."""
    return b"%x\r\n%s\r\n" % (len(payload), payload)


def event(obj: dict[str, Any]) -> bytes:
    """One SSE event, framed."""
    return frame(b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n")


class Encoded:
    """The pre-encoded frames of one (endpoint, model): the token chunk, the finish chunk."""

    def __init__(self, path: str, model: str) -> None:
        self.chat = path == CHAT
        kind = "chat.completion.chunk" if self.chat else "text_completion"
        self.base = {"id": "fast-0", "object": kind, "created": 0, "model": model}
        self.role = event({**self.base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})
        self.token = event({**self.base, "choices": [self._choice(" tok", None)]})
        self.finish = event({**self.base, "choices": [self._choice("", "length")]})

    def _choice(self, text: str, finish: str | None) -> dict[str, Any]:
        if self.chat:
            return {"index": 0, "delta": {"content": text} if text else {}, "finish_reason": finish}
        return {"index": 0, "text": text, "logprobs": None, "finish_reason": finish}

    def usage(self, prompt_tokens: int, completion_tokens: int) -> bytes:
        """The usage chunk (choices empty, as with `stream_options.include_usage`)."""
        return event({**self.base, "choices": [], "usage": {
            "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens}})


class FastServer:
    """The request handler: one coroutine per connection, requests answered in turn."""

    def __init__(self, behaviour: Behaviour) -> None:
        self.behaviour = behaviour
        self.encoded: dict[tuple[str, str], Encoded] = {}
        self.connections = 0
        self.requests = 0

    async def connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Serve requests on one keep-alive connection until the client closes it."""
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path = lines[0].split(" ", 2)[:2]
                length, close = 0, False
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    name = name.strip().lower()
                    if name == "content-length":
                        length = int(value)
                    elif name == "connection" and value.strip().lower() == "close":
                        close = True
                body = await reader.readexactly(length) if length else b""
                if not await self.answer(method, path.split("?", 1)[0], body, writer) or close:
                    break
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, ValueError):
            pass
        finally:
            writer.close()

    async def answer(self, method: str, path: str, body: bytes, writer: asyncio.StreamWriter) -> bool:
        """Write one answer; False when the connection must be closed."""
        self.requests += 1
        if method == "GET" and path == "/stats":
            return self.json(writer, 200, {"connections": self.connections, "requests": self.requests})
        if method == "GET" and path == "/health":
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-type: text/plain\r\n\r\nok")
            return True
        if method == "GET" and path == "/v1/models":
            return self.json(writer, 200, {"object": "list", "data": [
                {"id": "fast", "object": "model", "created": 0, "owned_by": "fast_server"}]})
        if method != "POST" or path not in (CHAT, COMPLETIONS):
            return self.json(writer, 404, error(f"no route {method} {path}", "not_found"))
        try:
            req = json.loads(body)
        except ValueError:
            return self.json(writer, 400, error("body is not JSON", "invalid_request_error"))
        if not isinstance(req, dict):
            return self.json(writer, 400, error("body is not a JSON object", "invalid_request_error"))
        fault = req.get("x_fault")
        if fault in ("400", "500"):
            return self.json(writer, int(fault), error(f"injected fault {fault}", "fast_server_fault"))
        await self.stream(path, req, writer, fault)
        return fault != "drop"

    async def stream(self, path: str, req: dict[str, Any], writer: asyncio.StreamWriter, fault: object) -> None:
        """The event stream: role chunk (chat), token chunks, finish, usage, [DONE]."""
        b = self.behaviour
        model = str(req.get("model") or "fast")
        enc = self.encoded.get((path, model))
        if enc is None:
            enc = self.encoded[(path, model)] = Encoded(path, model)
        n = int(req.get("max_tokens") or req.get("max_completion_tokens") or b.chunks)
        delay = float(req.get("x_delay_ms", b.delay_s * 1000)) / 1000
        ttft = float(req["x_ttft_ms"]) / 1000 if "x_ttft_ms" in req else (b.ttft_s if b.ttft_s is not None else delay)
        writer.write(STREAM_HEAD + enc.role if enc.chat else STREAM_HEAD)
        for i in range(n):
            pause = ttft if i == 0 else delay
            if pause > 0:
                await writer.drain()
                await asyncio.sleep(pause)
            writer.write(enc.token)
            if i == 1 and fault == "drop":
                await writer.drain()
                writer.transport.abort()
                return
            if i == 1 and fault == "garbage":
                writer.write(frame(b'data: {"choices": [\n\n'))
        tail = [enc.finish]
        if req.get("x_usage", b.usage):
            tail.append(enc.usage(prompt_tokens(req), n * int(req.get("x_tokens_per_chunk", 1))))
        if req.get("x_done", b.done):
            tail.append(frame(DONE))
        tail.append(END)
        writer.write(b"".join(tail))
        await writer.drain()

    @staticmethod
    def json(writer: asyncio.StreamWriter, status: int, obj: dict[str, Any]) -> bool:
        """A JSON answer with a length, on the kept-alive connection."""
        payload = json.dumps(obj).encode()
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 500: "Internal Server Error"}.get(status, "Error")
        writer.write(b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                     % (status, reason.encode(), len(payload), payload))
        return True


def error(message: str, kind: str) -> dict[str, Any]:
    """An OpenAI-shaped error body."""
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def prompt_tokens(req: dict[str, Any]) -> int:
    """A cheap stand-in for a prompt's token count: its whitespace-separated words."""
    prompt = req.get("prompt")
    if prompt is None:
        prompt = " ".join(str(m.get("content") or "") for m in req.get("messages") or () if isinstance(m, dict))
    return len(str(prompt).split())


async def serve(port: int, behaviour: Behaviour) -> None:
    """Listen on 127.0.0.1:`port` until killed; announce the port on stdout."""
    server = await asyncio.start_server(FastServer(behaviour).connection, "127.0.0.1", port, backlog=2048)
    print(f"listening on http://127.0.0.1:{server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--chunks", type=int, default=16, help="token chunks per answer when the body has no max_tokens")
    ap.add_argument("--delay-ms", type=float, default=0.0, help="pause before each token chunk")
    ap.add_argument("--ttft-ms", type=float, default=None, help="pause before the first token chunk (default: --delay-ms)")
    ap.add_argument("--no-usage", action="store_true", help="never send the usage chunk")
    ap.add_argument("--no-done", action="store_true", help="end streams without data: [DONE]")
    args = ap.parse_args()
    behaviour = Behaviour(args.chunks, args.delay_ms / 1000, None if args.ttft_ms is None else args.ttft_ms / 1000,
                          not args.no_usage, not args.no_done)
    try:
        import uvloop
    except ImportError:
        run = asyncio.run
    else:
        run = uvloop.run
    try:
        run(serve(args.port, behaviour))
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
