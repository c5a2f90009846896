"""POST /v1/completions: one choice per prompt (text, texts, token ids or lists of token ids),
with `echo`, completions-shaped `logprobs` and vLLM's per-choice `prompt_logprobs`.

As in vLLM, `echo` with `logprobs` reports the prompt's logprobs too (first token None), and
`echo` with `max_tokens: 0` scores the prompt without generating: the engine runs one step and
its token is dropped.
"""

from __future__ import annotations

import asyncio
import time
from contextlib import aclosing
from dataclasses import dataclass, replace
from typing import Any
from collections.abc import AsyncIterator

from gatekeeper.engine.outputs import TokenLogprob
from gatekeeper.engine.sampling_params import SamplingParams
from gatekeeper.engine.server import sse
from gatekeeper.engine.server.protocol import CompletionRequest
from gatekeeper.engine.server.serving import Collected, Serving, merge, random_id, usage
from gatekeeper.engine.server.structured import constraint


@dataclass(frozen=True)
class PromptPlan:
    """One prompt of a completions request, as the engine gets it."""

    ids: list[int]
    text: str
    params: SamplingParams
    drop_output: bool  # echo with max_tokens 0


class _LogprobWriter:
    """Builds the completions `logprobs` object incrementally, keeping `text_offset` running."""

    def __init__(self, serving: Serving, top_n: int) -> None:
        self.s, self.top_n, self.offset = serving, top_n, 0

    def block(self, ids: list[int], lps: list[TokenLogprob | None]) -> dict[str, Any]:
        out: dict[str, list] = {"text_offset": [], "token_logprobs": [], "tokens": [], "top_logprobs": []}
        for token_id, lp in zip(ids, lps):
            token = self.s.tokenizer.id_to_token(token_id)
            out["text_offset"].append(self.offset)
            out["tokens"].append(token)
            self.offset += len(token)
            if lp is None:
                out["token_logprobs"].append(None)
                out["top_logprobs"].append(None)
                continue
            out["token_logprobs"].append(lp.logprob)
            top = {self.s.tokenizer.id_to_token(t): v for t, v in lp.top[: self.top_n]}
            top.setdefault(token, lp.logprob)  # vLLM lists the sampled token too
            out["top_logprobs"].append(top)
        return out


def _join(a: dict | None, b: dict) -> dict:
    return b if a is None else {k: a[k] + b[k] for k in b}


class CompletionServing:
    """Text completions over one engine."""

    def __init__(self, serving: Serving) -> None:
        self.s = serving

    def plan(self, req: CompletionRequest) -> list[PromptPlan]:
        """Validate against the model and build one engine request per prompt."""
        s = self.s
        s.check_model(req.model)
        p = req.prompt
        if isinstance(p, str):
            prompts: list[str | list[int]] = [p]
        elif isinstance(p[0], int):
            prompts = [p]  # type: ignore[list-item]
        else:
            prompts = list(p)  # type: ignore[arg-type]
        plans = []
        logprobs = s.logprob_count(req.logprobs)
        prompt_logprobs = s.logprob_count(req.prompt_logprobs)
        if req.echo and logprobs is not None:
            prompt_logprobs = max(prompt_logprobs or 0, logprobs)
        grammar = constraint(s.engine.core.grammars, req.response_format, req.structured_outputs)
        for prompt in prompts:
            if isinstance(prompt, str):
                ids, text = s.tokenizer.encode(prompt, add_special_tokens=req.add_special_tokens), prompt
            else:
                s.check_token_ids(prompt)
                ids, text = list(prompt), s.tokenizer.decode(prompt, skip_special_tokens=False)
            drop = req.echo and req.max_tokens == 0
            max_tokens = s.max_tokens(len(ids), 1 if drop else req.max_tokens)
            params = replace(req.sampling_params(max_tokens, logprobs, prompt_logprobs), grammar=grammar)
            plans.append(PromptPlan(ids, text, params, drop))
        return plans

    async def create(self, req: CompletionRequest) -> dict[str, Any] | AsyncIterator[str]:
        """The response body, or an SSE stream when `stream` is set."""
        plans = self.plan(req)
        request_id = random_id("cmpl")
        if req.stream:
            started = await asyncio.gather(*(self.s.stream(f"{request_id}-{i}", p.ids, p.params)
                                             for i, p in enumerate(plans)), return_exceptions=True)
            failed = [s for s in started if isinstance(s, BaseException)]
            if failed:  # close the prompts that did start, then report the first failure
                await asyncio.gather(*(s.aclose() for s in started if not isinstance(s, BaseException)))
                raise failed[0]
            return self._stream(req, plans, request_id, started)
        results = await asyncio.gather(*(self.s.collect(f"{request_id}-{i}", p.ids, p.params)
                                         for i, p in enumerate(plans)))
        choices = [self._choice(req, i, p, got) for i, (p, got) in enumerate(zip(plans, results))]
        return {
            "id": request_id, "object": "text_completion", "created": int(time.time()), "model": self.s.model_name,
            "choices": choices,
            "usage": usage(sum(len(p.ids) for p in plans),
                           sum(0 if p.drop_output else len(g.token_ids) for p, g in zip(plans, results)),
                           sum(g.num_cached_tokens for g in results)),
            "system_fingerprint": None,
        }

    def _choice(self, req: CompletionRequest, index: int, plan: PromptPlan, got: Collected) -> dict[str, Any]:
        ids = [] if plan.drop_output else got.token_ids
        text = "" if plan.drop_output else got.text
        lps: list[TokenLogprob | None] = [] if plan.drop_output or got.logprobs is None else list(got.logprobs)
        logprobs = None
        if plan.params.logprobs is not None:
            writer = _LogprobWriter(self.s, plan.params.logprobs)
            if req.echo:
                logprobs = writer.block(plan.ids, list(got.prompt_logprobs or [None] * len(plan.ids)))
            logprobs = _join(logprobs, writer.block(ids, lps))
        return {
            "index": index,
            "text": (plan.text if req.echo else "") + text,
            "logprobs": logprobs,
            "finish_reason": "length" if plan.drop_output else got.finish_reason,
            "stop_reason": None if plan.drop_output else got.stop_reason,
            "prompt_logprobs": self.s.prompt_logprobs_dict(got.prompt_logprobs) if req.prompt_logprobs is not None
            else None,
        }

    async def _stream(self, req: CompletionRequest, plans: list[PromptPlan], request_id: str,
                      streams: list[AsyncIterator]) -> AsyncIterator[str]:
        created = int(time.time())
        opts = req.stream_options
        writers = [_LogprobWriter(self.s, p.params.logprobs or 0) for p in plans]
        echoed = [not req.echo for _ in plans]
        generated = [0 for _ in plans]
        cached = [0 for _ in plans]

        def chunk(index: int, text: str, logprobs: dict | None, finish: str | None, stop_reason: Any) -> str:
            body: dict[str, Any] = {
                "id": request_id, "object": "text_completion", "created": created, "model": self.s.model_name,
                "choices": [{"index": index, "text": text, "logprobs": logprobs, "finish_reason": finish,
                             "stop_reason": stop_reason}],
            }
            if opts is not None and opts.continuous_usage_stats:
                body["usage"] = usage(len(plans[index].ids), generated[index], cached[index])
            return sse.event(body)

        async with aclosing(merge(streams)) as updates:
            async for i, out in updates:
                plan, writer = plans[i], writers[i]
                cached[i] = max(cached[i], out.num_cached_tokens)
                text, lp_block = "", None
                if not echoed[i]:
                    echoed[i] = True
                    text = plan.text
                    if plan.params.logprobs is not None:
                        lp_block = writer.block(plan.ids, list(out.prompt_logprobs or [None] * len(plan.ids)))
                if not plan.drop_output:
                    generated[i] += len(out.new_token_ids)
                    text += out.new_text
                    if plan.params.logprobs is not None:
                        lps = list(out.new_logprobs or [None] * len(out.new_token_ids))
                        lp_block = _join(lp_block, writer.block(list(out.new_token_ids), lps))
                finish = ("length" if plan.drop_output else out.finish_reason) if out.finished else None
                if text or lp_block or finish:
                    yield chunk(i, text, lp_block, finish, None if plan.drop_output else out.stop_reason)
        if opts is not None and opts.include_usage:
            yield sse.event({
                "id": request_id, "object": "text_completion", "created": created, "model": self.s.model_name,
                "choices": [], "usage": usage(sum(len(p.ids) for p in plans), sum(generated), sum(cached)),
            })
        yield sse.DONE
