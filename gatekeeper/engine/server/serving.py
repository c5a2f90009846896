"""What chat and completions serving share: model checks, token budgets, one engine request's
life (metrics, abort when the consumer goes away) and the logprob shapes."""

from __future__ import annotations

import asyncio
import math
import time
import uuid
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any
from collections.abc import AsyncIterator

from gatekeeper.engine.errors import RequestError
from gatekeeper.engine.outputs import RequestOutput, TokenLogprob
from gatekeeper.engine.server.errors import ApiError
from gatekeeper.engine.server.metrics import ServerMetrics

CHAT_LOGPROB_FLOOR = -9999.0
"""vLLM clamps chat logprobs to this value (an impossible token has logprob -inf)."""


def random_id(prefix: str) -> str:
    """An OpenAI-style object id."""
    return f"{prefix}-{uuid.uuid4().hex}"


@dataclass
class Collected:
    """Everything one request produced, gathered from its updates."""

    prompt_token_ids: tuple[int, ...] = ()
    token_ids: list[int] = field(default_factory=list)
    text: str = ""
    logprobs: list[TokenLogprob] | None = None
    prompt_logprobs: tuple[TokenLogprob | None, ...] | None = None
    finish_reason: str | None = None
    stop_reason: int | str | None = None
    num_cached_tokens: int = 0

    def add(self, out: RequestOutput) -> None:
        """Fold one update in."""
        self.prompt_token_ids = out.prompt_token_ids
        self.token_ids += out.new_token_ids
        self.text += out.new_text
        if out.new_logprobs is not None:
            self.logprobs = (self.logprobs or []) + list(out.new_logprobs)
        if out.prompt_logprobs is not None:
            self.prompt_logprobs = out.prompt_logprobs
        if out.finished:
            self.finish_reason, self.stop_reason = out.finish_reason, out.stop_reason
        self.num_cached_tokens = max(self.num_cached_tokens, out.num_cached_tokens)


def usage(prompt_tokens: int, completion_tokens: int, cached_tokens: int) -> dict[str, Any]:
    """The `usage` object, with vLLM's `prompt_tokens_details.cached_tokens`."""
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": cached_tokens},
    }


class Serving:
    """Access to the engine for one app: the served model and request streams with metrics."""

    def __init__(self, engine: Any, metrics: ServerMetrics) -> None:
        self.engine = engine
        self.tokenizer = engine.tokenizer
        self.metrics = metrics
        self.model_name: str = engine.model_name
        self.max_model_len: int = engine.max_model_len
        self.logprobs_enabled = not engine.args.disable_logprobs

    def check_model(self, model: str | None) -> None:
        """404 for a model this server does not serve (None means the served one)."""
        if model is not None and model not in (self.model_name, self.engine.args.model):
            raise ApiError(f"The model `{model}` does not exist.", 404, param="model")

    def max_tokens(self, num_prompt_tokens: int, requested: int | None) -> int:
        """The generation budget: the request's, clipped to the context left (vLLM's rule)."""
        room = self.max_model_len - num_prompt_tokens
        if room < 1:
            raise ApiError(
                f"This model's maximum context length is {self.max_model_len} tokens. However, your request "
                f"has {num_prompt_tokens} input tokens. Please reduce the length of the input.", param="prompt")
        return room if requested is None else min(requested, room)

    def check_token_ids(self, ids: list[int]) -> None:
        """400 for token ids outside the vocabulary."""
        vocab = self.tokenizer.vocab_size
        bad = next((t for t in ids if not 0 <= t < vocab), None)
        if bad is not None:
            raise ApiError(f"token id {bad} is outside the vocabulary (size {vocab})", param="prompt")

    def logprob_count(self, n: int | None) -> int | None:
        """What the engine is asked for: nothing when logprobs are switched off (--disable-logprobs)."""
        return n if self.logprobs_enabled else None

    async def stream(self, request_id: str, prompt_ids: list[int], params: Any) -> AsyncIterator[RequestOutput]:
        """The request's updates. The first is awaited before returning, so a request the engine
        refuses raises here (a 400) rather than mid-stream; leaving the iteration early aborts it."""
        gen = self._run(request_id, prompt_ids, params)
        try:
            first = await anext(gen)
        except RequestError as e:
            await gen.aclose()
            raise ApiError(str(e)) from None
        except BaseException:
            await gen.aclose()
            raise
        return _prepend(first, gen)

    async def _run(self, request_id: str, prompt_ids: list[int], params: Any) -> AsyncIterator[RequestOutput]:
        start = last = time.monotonic()
        first_token = True
        started = False
        finish_reason: str | None = None
        try:
            async with aclosing(self.engine.generate(request_id, prompt_ids, params)) as outputs:
                async for out in outputs:
                    started = True
                    now = time.monotonic()
                    if first_token and out.new_token_ids:
                        self.metrics.observe_first_token(now - start)
                        first_token = False
                    elif out.new_token_ids:
                        self.metrics.observe_next_tokens(now - last, len(out.new_token_ids))
                    last = now
                    if out.finished:
                        finish_reason = out.finish_reason
                    yield out
        finally:
            if finish_reason is None:
                self.engine.abort(request_id)  # the client went away: free the blocks now
            if started:
                self.metrics.observe_finished(time.monotonic() - start, finish_reason)

    async def collect(self, request_id: str, prompt_ids: list[int], params: Any) -> Collected:
        """Run a request to the end and gather its output."""
        result = Collected(prompt_token_ids=tuple(prompt_ids))
        async with aclosing(await self.stream(request_id, prompt_ids, params)) as outputs:
            async for out in outputs:
                result.add(out)
        return result

    # --- logprob shapes -------------------------------------------------------------------

    def chat_logprob(self, lp: TokenLogprob, top_n: int) -> dict[str, Any]:
        """One entry of chat `logprobs.content`."""
        def item(token_id: int, logprob: float) -> dict[str, Any]:
            token = self.tokenizer.id_to_token(token_id)
            value = logprob if math.isnan(logprob) else max(logprob, CHAT_LOGPROB_FLOOR)
            return {"token": token, "logprob": value, "bytes": list(token.encode("utf-8"))}
        entry = item(lp.token_id, lp.logprob)
        entry["top_logprobs"] = [item(t, v) for t, v in lp.top[:top_n]]
        return entry

    def prompt_logprobs_dict(self, plps: tuple[TokenLogprob | None, ...] | None) -> list[dict | None] | None:
        """vLLM's prompt_logprobs shape: per position {token_id: {logprob, rank, decoded_token}}."""
        if plps is None:
            return None
        out: list[dict | None] = []
        for lp in plps:
            if lp is None:
                out.append(None)
                continue
            d = {str(t): {"logprob": v, "rank": r + 1, "decoded_token": self.tokenizer.id_to_token(t)}
                 for r, (t, v) in enumerate(lp.top)}
            d[str(lp.token_id)] = {"logprob": lp.logprob, "rank": lp.rank,
                                   "decoded_token": self.tokenizer.id_to_token(lp.token_id)}
            out.append(d)
        return out


async def _prepend(first: RequestOutput, rest: AsyncIterator[RequestOutput]) -> AsyncIterator[RequestOutput]:
    async with aclosing(rest):
        yield first
        async for out in rest:
            yield out


async def merge(streams: list[AsyncIterator[Any]]) -> AsyncIterator[tuple[int, Any]]:
    """Interleave several async iterators as their items arrive, tagged with the stream's index.
    Leaving early (or an error in one) cancels and closes all of them."""
    q: asyncio.Queue = asyncio.Queue()
    done = object()

    async def pump(i: int, it: AsyncIterator[Any]) -> None:
        try:
            async with aclosing(it):
                async for item in it:
                    await q.put((i, item))
            await q.put((i, done))
        except BaseException as e:
            await q.put((i, e))
            raise

    tasks = [asyncio.create_task(pump(i, s)) for i, s in enumerate(streams)]
    remaining = len(tasks)
    try:
        while remaining:
            i, item = await q.get()
            if item is done:
                remaining -= 1
            elif isinstance(item, BaseException):
                raise item
            else:
                yield i, item
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
