"""The load generator: OpenAI-compatible streaming requests under a load profile, timed per token.

    result = run_load(LoadTarget(base_url, model), requests, LoadProfile("concurrent", concurrency=8))

Profiles (as guidellm and `vllm bench serve` name them):
- `synchronous`: one request at a time;
- `concurrent`: `concurrency` requests in flight, each slot sending its next request as soon as
  the previous one ends;
- `rate`: requests scheduled at a constant `rate` per second; `poisson`: exponential gaps with
  mean 1/`rate` (seeded). Both cap requests in flight at `concurrency` (0: no cap).

Every request streams with `stream_options.include_usage`, so the server's own token count is
used where it reports one (the number of content chunks otherwise, flagged in the record). The
generator measures its own lateness: from when a request could have gone (its scheduled time, or
the moment a slot freed up when the cap held it back; for fixed concurrency, the end of its
stream's previous answer) to when its headers reached the socket (or, on a new connection, when
its handshake began). A p99 lateness above `MAX_LATENESS_S` means the client, not the server,
set the pace, and the measurement is marked invalid (guidellm reports the same "scheduler delay").

Each stream in flight has its own httpx client and kept-alive connection; rate profiles are
sent by one dispatching coroutine, so a long schedule costs one timer at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

import anyio
import httpx

from gatekeeper.endpoints.exchange import closed_before_answer
from gatekeeper.endpoints.retry import KEEPALIVE_EXPIRY_S  # idle blocks apart: below a server keep-alive
from gatekeeper.endpoints.wire import sse_events
from gatekeeper.errors import EndpointError

if TYPE_CHECKING:
    from gatekeeper.perf.cpu import CpuMeter

MAX_LATENESS_S = 0.010  # p99 send lateness above this: the client was the bottleneck
KINDS = ("synchronous", "concurrent", "rate", "poisson")
_ON_THE_WIRE = ("connection.connect_tcp.started", "http11.send_request_headers.started")  # httpcore trace events


@dataclass(frozen=True)
class LoadTarget:
    """Where the load goes: a server's base URL (no /v1), the model to name, an optional key."""

    base_url: str
    model: str
    api_key: str | None = None
    timeout_s: float = 120.0
    cpu: CpuMeter | None = field(default=None, compare=False)  # the server's CPU clock, for a target launched here


@dataclass(frozen=True)
class LoadRequest:
    """One request: `body` is the OpenAI body without model/stream; `endpoint` chat or completions."""

    body: dict[str, Any]
    endpoint: Literal["chat", "completions"] = "completions"


@dataclass(frozen=True)
class LoadProfile:
    """How requests are sent; the first `warmup` requests are sent but not measured."""

    kind: str = "concurrent"
    concurrency: int = 1
    rate: float | None = None
    warmup: int = 0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown load profile {self.kind!r} (known: {', '.join(KINDS)})")
        if self.kind in ("rate", "poisson") and not (self.rate and self.rate > 0):
            raise ValueError(f"profile {self.kind} needs a positive rate")

    def describe(self) -> str:
        """e.g. "concurrent 8", "poisson 4.0/s"."""
        if self.kind in ("rate", "poisson"):
            return f"{self.kind} {self.rate:g}/s" + (f" (at most {self.concurrency} in flight)" if self.concurrency else "")
        return "synchronous" if self.kind == "synchronous" else f"concurrent {self.concurrency}"


@dataclass(frozen=True, kw_only=True)
class RequestRecord:
    """One request's timeline, in seconds on the generator's monotonic clock."""

    index: int
    scheduled_s: float
    sent_s: float
    end_s: float
    chunk_s: tuple[float, ...]  # arrival of each chunk that carried output text
    output_tokens: int
    prompt_tokens: int | None
    usage_reported: bool
    error: str | None = None
    warmup: bool = False
    lateness_s: float = 0.0  # the client's own delay: woken (or free to send) later than scheduled
    reconnected: bool = False  # its first send's connection closed before any answer: timed from the second

    @property
    def ok(self) -> bool:
        """Answered without error and with at least one output token."""
        return self.error is None and self.output_tokens > 0

    @property
    def ttft_s(self) -> float | None:
        """Time to the first output chunk."""
        return self.chunk_s[0] - self.sent_s if self.chunk_s else None

    @property
    def e2e_s(self) -> float:
        """Send to last byte."""
        return self.end_s - self.sent_s

    @property
    def tpot_s(self) -> float | None:
        """vLLM's time per output token: the decode time after the first token over the
        remaining tokens (the first token excluded); None with fewer than two tokens."""
        if self.ttft_s is None or self.output_tokens < 2:
            return None
        return (self.e2e_s - self.ttft_s) / (self.output_tokens - 1)

    @property
    def tpot_incl_first_s(self) -> float | None:
        """guidellm's time per output token: the whole request time over all output tokens."""
        return self.e2e_s / self.output_tokens if self.output_tokens else None

    @property
    def itl_s(self) -> tuple[float, ...]:
        """Gaps between consecutive output chunks (a chunk may carry several tokens)."""
        return tuple(b - a for a, b in zip(self.chunk_s, self.chunk_s[1:]))


@dataclass
class LoadResult:
    """A profile's records (warm-up ones flagged) and the measured window."""

    profile: LoadProfile
    records: list[RequestRecord] = field(default_factory=list)
    started_s: float = 0.0
    ended_s: float = 0.0
    cpu_s: float | None = None  # the server's CPU seconds over the measured requests (None: no meter)

    @property
    def measured(self) -> list[RequestRecord]:
        """The records after warm-up."""
        return [r for r in self.records if not r.warmup]

    @property
    def lateness_p99_s(self) -> float:
        """p99 of the send lateness of measured requests (0 when none)."""
        late = sorted(r.lateness_s for r in self.measured)
        return late[min(len(late) - 1, int(0.99 * len(late)))] if late else 0.0

    @property
    def client_bound(self) -> bool:
        """The generator could not keep its schedule: the figures describe the client."""
        return self.lateness_p99_s > MAX_LATENESS_S


def run_load(target: LoadTarget, requests: Sequence[LoadRequest], profile: LoadProfile) -> LoadResult:
    """Send every request under `profile`; blocks until all are answered or failed."""
    return asyncio.run(run_load_async(target, requests, profile))


async def run_load_async(target: LoadTarget, requests: Sequence[LoadRequest], profile: LoadProfile) -> LoadResult:
    """`run_load` on the running event loop."""
    result = LoadResult(profile)
    records: list[RequestRecord | None] = [None] * len(requests)
    fixed = profile.kind in ("synchronous", "concurrent")
    slots = 1 if profile.kind == "synchronous" else max(profile.concurrency, 1) if fixed else profile.concurrency
    queue = iter(range(len(requests)))  # for fixed slots: one shared iterator, each slot takes the next request
    async with _ClientPool(target, slots) as pool:
        cpu0 = target.cpu.seconds() if target.cpu else None
        start = time.perf_counter()
        result.started_s = start

        async def slot() -> None:
            http = await pool.acquire()
            ready = time.perf_counter()
            for i in queue:
                records[i] = await _send(http, target.model, requests[i], i, ready, i < profile.warmup, ready)
                ready = time.perf_counter()

        async def dispatch() -> None:
            """Send each request at its time, from one coroutine: one timer at a time, whatever the count."""
            sending: list[asyncio.Task[None]] = []
            unblocked = start  # when a wait for a free slot last ended: the cap's doing, not lateness, until then
            for i, at in enumerate(_schedule(profile, len(requests), start)):
                while (delay := at - time.perf_counter()) > 0:  # never early, whatever the loop's timer resolution
                    await asyncio.sleep(delay)
                blocked = not pool.can_acquire()
                http = await pool.acquire()
                if blocked:
                    unblocked = time.perf_counter()
                sending.append(asyncio.create_task(one(i, at, http, max(at, unblocked))))
            await asyncio.gather(*sending)

        async def one(i: int, at: float, http: httpx.AsyncClient, free_s: float) -> None:
            try:
                records[i] = await _send(http, target.model, requests[i], i, at, i < profile.warmup, free_s)
            finally:
                pool.release(http)

        if fixed:
            await asyncio.gather(*(slot() for _ in range(slots)))
        else:
            await dispatch()
        result.ended_s = time.perf_counter()
        if target.cpu and cpu0 is not None and not profile.warmup:
            result.cpu_s = target.cpu.seconds() - cpu0
    result.records = [r for r in records if r is not None]
    return result


def run_alternating(targets: dict[str, LoadTarget], requests: Sequence[LoadRequest], order: Sequence[str]) -> dict[str, LoadResult]:
    """Synchronous load to several targets taking turns request by request: request j goes to
    every target, in `order` for even j and reversed for odd (A B, B A, …), one request in flight
    in all. Each target keeps its own connection. At concurrency 1 this pairs the sides' requests
    a few hundred milliseconds apart, so a machine's drift between blocks cannot come between
    them; each side's result is a "synchronous" one (its throughput counts its own busy time)."""
    return asyncio.run(_alternating(targets, requests, list(order)))


async def _alternating(targets: dict[str, LoadTarget], requests: Sequence[LoadRequest],
                       order: list[str]) -> dict[str, LoadResult]:
    results = {side: LoadResult(LoadProfile("synchronous")) for side in order}
    async with contextlib.AsyncExitStack() as stack:
        pools = {side: await stack.enter_async_context(_ClientPool(targets[side], 1)) for side in order}
        clients = {side: await pool.acquire() for side, pool in pools.items()}
        for res in results.values():
            res.started_s = time.perf_counter()
        cpu = {side: 0.0 for side in order}  # each side's CPU over its own requests, not the other side's turns
        for j, req in enumerate(requests):
            for side in (order if j % 2 == 0 else order[::-1]):
                meter = targets[side].cpu
                cpu0 = meter.seconds() if meter else 0.0
                ready = time.perf_counter()
                results[side].records.append(await _send(clients[side], targets[side].model, req, j, ready, False, ready))
                cpu[side] += (meter.seconds() - cpu0) if meter else 0.0
        for side, res in results.items():
            res.cpu_s = cpu[side] if targets[side].cpu else None
        for res in results.values():
            res.ended_s = time.perf_counter()
    return results


class _ClientPool:
    """One httpx client (and so one kept-alive connection) per request in flight, `size` at most
    (0: unbounded). httpcore's own pool scans all its connections on every request and response
    event, so 256 streams through one client cost more CPU than the streams themselves. A bounded
    pool makes its clients before the clock starts."""

    def __init__(self, target: LoadTarget, size: int) -> None:
        self.size = size
        self.free: asyncio.Queue[httpx.AsyncClient] = asyncio.Queue()
        self.clients: list[httpx.AsyncClient] = []
        self.kwargs: dict[str, Any] = {
            "base_url": target.base_url.rstrip("/"),
            "headers": {"Authorization": f"Bearer {target.api_key}"} if target.api_key else {},
            "timeout": httpx.Timeout(target.timeout_s, connect=min(10.0, target.timeout_s)),
            "limits": httpx.Limits(max_connections=1, max_keepalive_connections=1, keepalive_expiry=KEEPALIVE_EXPIRY_S),
            "verify": httpx.create_ssl_context(),  # built once: each client building its own costs ~10 ms
        }

    async def __aenter__(self) -> _ClientPool:
        await anyio.sleep(0)  # loads anyio's asyncio backend now: httpx would on the first request (~20 ms late)
        for _ in range(self.size):
            self.free.put_nowait(self._new())
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.gather(*(c.aclose() for c in self.clients), return_exceptions=True)

    def _new(self) -> httpx.AsyncClient:
        client = httpx.AsyncClient(**self.kwargs)
        self.clients.append(client)
        return client

    def can_acquire(self) -> bool:
        """Whether `acquire` would return without waiting."""
        return self.size == 0 or not self.free.empty()

    async def acquire(self) -> httpx.AsyncClient:
        """A free client (a new one when the pool is unbounded and none is free), else wait for one."""
        if self.free.empty() and self.size == 0:
            return self._new()
        return await self.free.get()

    def release(self, client: httpx.AsyncClient) -> None:
        """Hand a client back for the next request."""
        self.free.put_nowait(client)


def _schedule(profile: LoadProfile, n: int, start: float) -> list[float]:
    """Scheduled send times (absolute) for the rate profiles; `start` for the others."""
    if profile.kind == "rate":
        assert profile.rate
        return [start + i / profile.rate for i in range(n)]
    if profile.kind == "poisson":
        assert profile.rate
        rng, t, out = random.Random(profile.seed), start, []
        for _ in range(n):
            out.append(t)
            t += rng.expovariate(profile.rate)
        return out
    return [start] * n


async def _send(http: httpx.AsyncClient, model: str, req: LoadRequest, index: int, scheduled: float,
                warmup: bool, free_s: float) -> RequestRecord:
    """One streamed request; a failure is a record with `error` (never an exception). The record's
    lateness is how long after `free_s` (when it could have gone) its headers were written to the
    socket, or a new connection's handshake began (httpcore's trace hook, as guidellm times its
    request start): the client's own work before the network counts, and grows on a busy event
    loop; the network's round trip to open a connection does not."""
    record = await _attempt(http, model, req, index, scheduled, warmup, free_s)
    if record.error is not None and record.error.startswith(_CLOSED):  # the kept-alive race: once more, fresh
        again = await _attempt(http, model, req, index, scheduled, warmup, time.perf_counter())
        return replace(again, reconnected=True)
    return record


_CLOSED = "closed before any answer: "


async def _attempt(http: httpx.AsyncClient, model: str, req: LoadRequest, index: int, scheduled: float,
                   warmup: bool, free_s: float) -> RequestRecord:
    """One send of `_send`'s request; a connection closed before any answer is an error starting
    with `_CLOSED` (endpoints/exchange.closed_before_answer: the server never saw it)."""
    path = "/v1/chat/completions" if req.endpoint == "chat" else "/v1/completions"
    body = {**req.body, "model": model, "stream": True, "stream_options": {"include_usage": True}}
    sent = time.perf_counter()
    opened = False
    chunks: list[float] = []
    usage: dict[str, Any] | None = None
    error = None
    written: list[float] = []

    async def trace(event: str, info: dict[str, Any]) -> None:
        if event in _ON_THE_WIRE and not written:
            written.append(time.perf_counter())

    try:
        async with http.stream("POST", path, json=body, extensions={"trace": trace}) as resp:
            opened = True
            if resp.status_code >= 400:
                text = (await resp.aread()).decode(errors="replace")
                error = f"HTTP {resp.status_code}: {text[:200]}"
            else:
                rest = b""
                async for data in resp.aiter_bytes():
                    at = time.perf_counter()  # every event in this read arrived now
                    *lines, rest = (rest + data).split(b"\n") if rest else data.split(b"\n")
                    for event in sse_events((line.decode() for line in lines), path):
                        if isinstance(event, str):
                            continue  # [DONE]: read on to the end of the body, so the connection is kept for the next request
                        if event.get("usage"):
                            usage = event["usage"]
                        if any(_text_of(c) for c in event.get("choices") or ()):
                            chunks.append(at)
    except (httpx.HTTPError, EndpointError, ValueError) as e:  # a broken or error event ends the request as failed
        closed = not opened and isinstance(e, httpx.HTTPError) and closed_before_answer(e)
        error = (_CLOSED if closed else "") + f"{type(e).__name__}: {e}"[:300]
    end = time.perf_counter()
    reported = isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int)
    tokens = int(usage["completion_tokens"]) if reported and usage else len(chunks)
    prompt = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    return RequestRecord(index=index, scheduled_s=scheduled, sent_s=sent, end_s=end, chunk_s=tuple(chunks), output_tokens=tokens,
                         prompt_tokens=prompt if isinstance(prompt, int) else None, usage_reported=reported, error=error, warmup=warmup,
                         lateness_s=max(0.0, (written[0] if written else sent) - free_s))


def _text_of(choice: Any) -> str:
    """The output text a streamed choice carries (completions `text`, chat `delta.content`)."""
    if not isinstance(choice, dict):
        return ""
    delta = choice.get("delta")
    if isinstance(delta, dict):
        return str(delta.get("content") or "") or ("tool" if delta.get("tool_calls") else "")
    return str(choice.get("text") or "")
