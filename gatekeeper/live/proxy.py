"""The two proxies' HTTP apps (aiohttp) and how they are served.

- `record_app`: a pass-through in front of an OpenAI-compatible server; each chat/completions
  exchange becomes a traffic record (redacted) appended to the traffic file.
- `shadow_app`: a pass-through to the primary; a sampled share of the chat/completions
  exchanges goes, after the client has its answer, onto the mirror's bounded queue.
- `sink_app`: accepts the requests a gateway mirrors (Envoy/Istio `mirror`, whose answers the
  gateway throws away): 202 at once, the request onto the queue.

The client's request and answer are never held back by the mirror: the copy is queued after
the answer's last byte was written, with `put_nowait`.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
from aiohttp import web

from gatekeeper.live.capture import Exchange, to_record
from gatekeeper.endpoints.retry import KEEPALIVE_EXPIRY_S
from gatekeeper.live.forward import forward
from gatekeeper.live.mirror import Counters, offer
from gatekeeper.live.recorder import TrafficWriter
from gatekeeper.live.redaction import BodyRedactor


def _session_ctx(upstream: str, timeout_s: float) -> Callable[[web.Application], Any]:
    async def ctx(app: web.Application) -> AsyncIterator[None]:
        # idle upstream connections closed before a uvicorn upstream's 5 s keep-alive closes them (aiohttp keeps
        # them 15 s): a request sent on one just as the upstream closes it would die before any answer
        connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300, keepalive_timeout=KEEPALIVE_EXPIRY_S)
        app["session"] = aiohttp.ClientSession(connector=connector,
                                               timeout=aiohttp.ClientTimeout(total=timeout_s, sock_connect=10),
                                               auto_decompress=False, skip_auto_headers=("User-Agent", "Accept-Encoding"))
        yield
        await app["session"].close()
    return ctx


def record_app(upstream: str, writer: TrafficWriter, tenant_header: str | None, redact: BodyRedactor,
               timeout_s: float = 600.0) -> web.Application:
    """The recording proxy."""
    async def handle(request: web.Request) -> web.StreamResponse:
        resp, ex = await forward(request, request.app["session"], upstream)
        if ex.error is None:
            record = to_record(ex, tenant_header, redact)
            if record is not None:
                writer.write(record)
        return resp

    app = web.Application(client_max_size=64 * 2**20)
    app.cleanup_ctx.append(_session_ctx(upstream, timeout_s))
    app.router.add_route("*", "/{tail:.*}", handle)
    return app


def shadow_app(primary: str, sample: float, q: Any, counters: Counters, timeout_s: float = 600.0) -> web.Application:
    """The shadow proxy: every client answered by the primary; `sample` of them mirrored."""
    async def handle(request: web.Request) -> web.StreamResponse:
        sampled = request.method == "POST" and random.random() < sample
        resp, ex = await forward(request, request.app["session"], primary, capture=sampled)
        counters.forwarded.value += 1  # one event loop writes it: no lock needed for a monotone counter
        if sampled and ex.error is None and ex.endpoint is not None:
            offer(q, counters, ex)
        return resp

    app = web.Application(client_max_size=64 * 2**20)
    app.cleanup_ctx.append(_session_ctx(primary, timeout_s))
    app.router.add_route("*", "/{tail:.*}", handle)
    return app


def sink_app(sample: float, q: Any, counters: Counters) -> web.Application:
    """The mirror sink: a gateway's mirrored copies, answered 202 at once and queued."""
    async def handle(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        ex = Exchange(request.method, request.path_qs, {k.lower(): v for k, v in request.headers.items()}, body)
        counters.forwarded.value += 1
        if ex.endpoint is None:
            return web.json_response({"error": {"message": "the sink mirrors POST /v1/chat/completions and "
                                                "/v1/completions only", "type": "invalid_request_error"}}, status=404)
        if random.random() < sample:
            offer(q, counters, ex)
        return web.json_response({"status": "accepted"}, status=202)

    app = web.Application(client_max_size=64 * 2**20)
    app.router.add_route("*", "/{tail:.*}", handle)
    return app


async def _serve(app: web.Application, host: str, port: int, ready: Callable[[str], None]) -> None:
    runner = web.AppRunner(app, access_log=None, handle_signals=True)
    await runner.setup()
    site = web.TCPSite(runner, host, port, backlog=1024)
    await site.start()
    bound = site._server.sockets[0].getsockname()[1] if site._server and site._server.sockets else port  # type: ignore[attr-defined]
    ready(f"http://{host}:{bound}")
    try:
        while True:
            await asyncio.sleep(3600)
    finally:
        await runner.cleanup()


def serve(app: web.Application, host: str, port: int, ready: Callable[[str], None]) -> None:
    """Serve `app` until SIGINT/SIGTERM; `ready` gets the bound base URL (port 0: a free one)."""
    try:
        import uvloop  # the proxy's event loop: libuv's is several times cheaper per forwarded chunk

        run: Callable[[Any], None] = uvloop.run
    except ImportError:
        run = asyncio.run
    try:
        run(_serve(app, host, port, ready))
    except (KeyboardInterrupt, asyncio.CancelledError, web.GracefulExit):
        pass
