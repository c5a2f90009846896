"""A real HTTP/1.1 proxy that loses a share of the requests sent on kept-alive connections, as a
uvicorn server does when it closes an idle connection just as the client sends on it.

    with keepalive_proxy(upstream_url, rate=0.01, seed=3) as proxy:
        ...  # point a target at proxy.url; proxy.dropped counts the requests lost so far

It relays bytes: each client connection gets its own upstream connection and everything the
upstream answers is passed back as it comes (streams included). It reads the client's requests
(head and `content-length` body) to know where each begins; a request that is not the first on
its connection is, with probability `rate` (a generator seeded with `seed`), never forwarded: the
proxy closes the client's connection without a byte of answer. That is the race a client sees
(httpx: "Server disconnected without sending a response"), and the server never saw the request.
"""

from __future__ import annotations

import asyncio
import random
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import urlsplit


@dataclass
class KeepAliveProxy:
    """The proxy's URL and what it did: requests relayed and requests dropped."""

    url: str = ""
    relayed: int = 0
    dropped: int = 0
    reused: int = 0  # requests that came on a kept-alive connection (the ones that could be dropped)
    lock: threading.Lock = field(default_factory=threading.Lock)


async def _read_request(reader: asyncio.StreamReader) -> bytes | None:
    """One whole request (head and body) or None when the client closed the connection."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    body = await reader.readexactly(length) if length else b""
    return head + body


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


def _serve(state: KeepAliveProxy, upstream: str, rate: float, seed: int, ready: threading.Event,
           stop: list[asyncio.AbstractEventLoop]) -> None:
    host, port = urlsplit(upstream).hostname or "127.0.0.1", urlsplit(upstream).port or 80
    rng = random.Random(seed)

    async def client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(host, port)
        back = asyncio.create_task(_pipe(up_reader, writer))
        served = 0
        try:
            while (request := await _read_request(reader)) is not None:
                if served:
                    with state.lock:
                        state.reused += 1
                        drop = rng.random() < rate
                        state.dropped += drop
                    if drop:
                        return
                with state.lock:
                    state.relayed += 1
                up_writer.write(request)
                await up_writer.drain()
                served += 1
        except ConnectionError:
            pass
        finally:
            back.cancel()
            up_writer.close()
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(client, "127.0.0.1", 0)
        state.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        stop.append(asyncio.get_running_loop())
        ready.set()
        async with server:
            try:
                await server.serve_forever()
            except asyncio.CancelledError:
                pass

    asyncio.run(main())


@contextmanager
def keepalive_proxy(upstream: str, rate: float, seed: int = 0) -> Iterator[KeepAliveProxy]:
    """Yield the running proxy in front of `upstream` (a base URL: http://host:port)."""
    state, ready, loops = KeepAliveProxy(), threading.Event(), []
    thread = threading.Thread(target=_serve, args=(state, upstream, rate, seed, ready, loops), daemon=True)
    thread.start()
    if not ready.wait(10):
        raise RuntimeError("the keep-alive proxy did not start")
    try:
        yield state
    finally:
        loop = loops[0]
        loop.call_soon_threadsafe(lambda: [t.cancel() for t in asyncio.all_tasks(loop)])
        thread.join(10)
