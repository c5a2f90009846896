"""The engine as the HTTP server sees it: async request streams over a core run in a thread.

One background thread owns the core and steps it while there is work; requests and aborts reach
it through a queue, and each step's outputs go back to the waiting coroutines on their event
loop. A consumer that stops iterating (a client that disconnected) aborts its sequence, which
frees its blocks.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import uuid
from dataclasses import dataclass
from typing import AsyncIterator

from gatekeeper.engine.builder import build_engine
from gatekeeper.engine.engine_args import EngineArgs
from gatekeeper.engine.errors import EngineCoreError, EngineDeadError, EngineError, RequestError
from gatekeeper.engine.faults import FaultSet
from gatekeeper.engine.output_processor import RequestState
from gatekeeper.engine.outputs import RequestOutput
from gatekeeper.engine.sampling_params import SamplingParams
from gatekeeper.engine.sequence import Sequence

log = logging.getLogger("gatekeeper.engine")


@dataclass
class _Stream:
    state: RequestState
    loop: asyncio.AbstractEventLoop
    queue: asyncio.Queue


class AsyncEngine:
    """Async facade over one engine core."""

    def __init__(self, args: EngineArgs) -> None:
        parts = build_engine(args)
        self.args = args
        self.core = parts.core
        self.tokenizer = parts.tokenizer
        self.model_name = args.served_model_name or parts.model_name
        self.max_model_len = parts.max_model_len
        self.faults: FaultSet = args.faults
        self._startup_lines = parts.startup_lines
        self._commands: queue.Queue = queue.Queue()
        self._streams: dict[str, _Stream] = {}
        self._stats: dict[str, float] = self.core.stats()
        self._error: BaseException | None = None
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name="engine-loop", daemon=True)
        self._thread.start()

    @classmethod
    def from_args(cls, args: EngineArgs) -> "AsyncEngine":
        """Load the checkpoint and start the engine loop."""
        return cls(args)

    def startup_lines(self) -> list[str]:
        """Log lines describing the active execution path."""
        return list(self._startup_lines)

    def stats(self) -> dict[str, float]:
        """The latest gauges and counters (a snapshot taken by the engine thread)."""
        return dict(self._stats)

    def check_health(self) -> None:
        """Raise EngineDeadError if the engine loop has died."""
        if self._error is not None or not self._thread.is_alive():
            raise EngineDeadError(f"engine loop stopped: {self._error!r}")

    def validate(self, prompt_token_ids: list[int], params: SamplingParams) -> None:
        """Raise RequestError for a request the engine cannot serve."""
        n = len(prompt_token_ids)
        if n == 0:
            raise RequestError("the prompt is empty")
        vocab = self.tokenizer.vocab_size
        bad = next((t for t in prompt_token_ids if not 0 <= t < vocab), None)
        if bad is not None:
            raise RequestError(f"token id {bad} is outside the vocabulary (size {vocab})")
        if n >= self.max_model_len:
            raise RequestError(
                f"This model's maximum context length is {self.max_model_len} tokens. However, your prompt "
                f"has {n} tokens, leaving no room for generation."
            )

    async def generate(self, request_id: str | None, prompt_token_ids: list[int], params: SamplingParams) -> AsyncIterator[RequestOutput]:
        """Stream updates for one request until it finishes."""
        self.check_health()
        self.validate(prompt_token_ids, params)
        request_id = request_id or uuid.uuid4().hex
        if request_id in self._streams:
            raise RequestError(f"request id {request_id!r} is already running")
        state = RequestState(request_id, tuple(prompt_token_ids), params.stop, params.skip_special_tokens)
        stream = _Stream(state, asyncio.get_running_loop(), asyncio.Queue())
        self._streams[request_id] = stream
        self._commands.put(("add", Sequence(request_id, list(prompt_token_ids), params)))
        finished = False
        try:
            while True:
                item = await stream.queue.get()
                if isinstance(item, BaseException):
                    self.check_health()
                    raise EngineError(f"the engine failed on this request: {type(item).__name__}: {item}")
                finished = item.finished
                yield item
                if finished:
                    return
        finally:
            self._streams.pop(request_id, None)
            if not finished:
                self.abort(request_id)

    def abort(self, request_id: str) -> None:
        """Stop a request and free its blocks (safe to call for finished requests)."""
        self._commands.put(("abort", request_id))

    async def shutdown(self) -> None:
        """Stop the engine loop."""
        self._stopping = True
        self._commands.put(("stop", None))
        await asyncio.to_thread(self._thread.join, 10)

    def _deliver(self, request_id: str, item: RequestOutput | BaseException) -> None:
        stream = self._streams.get(request_id)
        if stream is not None:
            stream.loop.call_soon_threadsafe(stream.queue.put_nowait, item)

    def _handle(self, command: tuple) -> None:
        kind, payload = command
        if kind == "add":
            self.core.add(payload)
        elif kind == "abort":
            self.core.abort(payload)
        elif kind == "stop":
            self._stopping = True

    def _loop(self) -> None:
        try:
            while not self._stopping:
                block = not self.core.has_unfinished()
                try:
                    self._handle(self._commands.get(block=block, timeout=0.5 if block else None))
                    while True:
                        self._handle(self._commands.get_nowait())
                except queue.Empty:
                    pass
                try:
                    steps = self.core.step() if self.core.has_unfinished() else []
                except EngineCoreError:  # the core itself failed: the loop dies with it
                    raise
                except Exception as e:  # fail the requests of this step, keep serving the rest
                    log.exception("engine step failed; aborting the requests it held")
                    for rid in list(self.core.sequences):
                        self.core.abort(rid)
                        self._deliver(rid, e)
                    steps = []
                for step in steps:
                    stream = self._streams.get(step.seq.request_id)
                    if stream is None:
                        self.core.abort(step.seq.request_id)
                        continue
                    out = stream.state.process(self.tokenizer, step)
                    if out.finished and step.seq.finish_reason is None:
                        self.core.abort(step.seq.request_id)  # a stop string ended it
                    self._deliver(step.seq.request_id, out)
                self._stats = self.core.stats()
        except BaseException as e:  # the loop must report, not vanish
            log.exception("engine loop died")
            self._error = e
            for rid in list(self._streams):
                self._deliver(rid, e)
