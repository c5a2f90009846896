"""The pass-through both proxies are built on: one client request forwarded to the upstream and
its answer streamed back chunk by chunk, as the upstream sent it (status, headers, body bytes,
compression), while a copy of both is captured for the record.

Hop-by-hop headers (RFC 9110 §7.6.1) are not forwarded; `Host` becomes the upstream's. A body
longer than the capture limit still reaches the client whole; only the copy is cut (and marked).
An upstream that cannot be reached is a 502 with an OpenAI-shaped error, as a gateway answers.
"""

from __future__ import annotations

import asyncio
import json
import time
import zlib

import aiohttp
from aiohttp import web

from gatekeeper.live.capture import Exchange

HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer", "trailers",
                 "transfer-encoding", "upgrade", "host", "content-length"})
CAPTURE_LIMIT = 8 * 2**20  # bytes of an answer kept for the record


def _decoded(data: bytes, encoding: str) -> bytes | None:
    """A captured body without its content encoding (None: an encoding we cannot undo)."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return data
    if encoding in ("gzip", "x-gzip", "deflate"):
        try:
            return zlib.decompress(data, 47 if encoding != "deflate" else 15)
        except zlib.error:
            return None
    return None


def gateway_error(status: int, message: str) -> web.Response:
    """An OpenAI-shaped error answer from the proxy itself."""
    body = {"error": {"message": message, "type": "proxy_error", "param": None, "code": status}}
    return web.Response(status=status, text=json.dumps(body), content_type="application/json")


async def forward(request: web.Request, session: aiohttp.ClientSession, upstream: str,
                  capture: bool = True) -> tuple[web.StreamResponse, Exchange]:
    """Forward `request` to `upstream` (a base URL) and stream the answer back to the client."""
    body = await request.read()
    ex = Exchange(request.method, request.path_qs, {k.lower(): v for k, v in request.headers.items()}, body)
    headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP}
    t0 = time.perf_counter()
    resp: web.StreamResponse | None = None
    kept: list[bytes] = []
    size = 0
    try:
        async with session.request(request.method, upstream + request.path_qs, headers=headers, data=body or None,
                                   allow_redirects=False, auto_decompress=False) as up:
            resp = web.StreamResponse(status=up.status, reason=up.reason)
            for k, v in up.headers.items():
                if k.lower() not in HOP or k.lower() == "content-length":
                    resp.headers.add(k, v)
            ex.status, ex.content_type = up.status, up.headers.get("Content-Type", "")
            await resp.prepare(request)
            async for chunk in up.content.iter_any():
                if ex.ttft_s is None:
                    ex.ttft_s = time.perf_counter() - t0
                await resp.write(chunk)
                if capture and size < CAPTURE_LIMIT:
                    kept.append(chunk)
                size += len(chunk)
            await resp.write_eof()
            if capture:
                data = _decoded(b"".join(kept), up.headers.get("Content-Encoding", ""))
                ex.truncated = size > CAPTURE_LIMIT or data is None
                ex.answer = data or b""
    except (aiohttp.ClientError, asyncio.TimeoutError, ConnectionResetError) as e:
        ex.error = f"connect: {type(e).__name__}: {e}"
        if resp is None:
            resp = gateway_error(502, f"upstream {upstream} did not answer: {type(e).__name__}")
    ex.e2e_s = time.perf_counter() - t0
    return resp, ex
