"""A synchronous Python API over an engine core, for evaluation scripts and tests.

    llm = LLM("gatekeeper/models/gk-tiny", profile="reference")
    [out] = llm.generate([ids], SamplingParams(temperature=0, max_tokens=32))
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

from gatekeeper.engine.builder import build_engine
from gatekeeper.engine.engine_args import DEFAULT_MODEL, EngineArgs
from gatekeeper.engine.faults import FaultSet
from gatekeeper.engine.output_processor import RequestState
from gatekeeper.engine.outputs import RequestOutput, TokenLogprob
from gatekeeper.engine.sampling_params import SamplingParams
from gatekeeper.engine.sequence import Sequence


@dataclass(frozen=True)
class Completion:
    """The finished result of one prompt."""

    prompt_token_ids: list[int]
    token_ids: list[int]
    text: str
    finish_reason: str | None
    stop_reason: int | str | None
    logprobs: list[TokenLogprob] | None
    prompt_logprobs: list[TokenLogprob | None] | None
    num_cached_tokens: int


class LLM:
    """Runs batches of prompts to completion on one engine core."""

    def __init__(self, model: str | None = None, profile: str = "reference", faults: tuple[str, ...] = (), **options) -> None:
        self.args = EngineArgs(model=str(model or DEFAULT_MODEL), profile=profile, faults=FaultSet.parse(list(faults)), **options)
        parts = build_engine(self.args)
        self.core = parts.core
        self.tokenizer = parts.tokenizer
        self.max_model_len = parts.max_model_len
        self._ids = itertools.count()

    def generate(self, prompts: list[list[int]], params: SamplingParams | list[SamplingParams]) -> list[Completion]:
        """Complete every prompt (token ids); all are submitted at once, so the optimized path
        batches them. Returns results in prompt order."""
        per_prompt = params if isinstance(params, list) else [params] * len(prompts)
        states: dict[str, tuple[RequestState, list[RequestOutput]]] = {}
        order = []
        for ids, p in zip(prompts, per_prompt):
            rid = f"llm-{next(self._ids)}"
            order.append(rid)
            states[rid] = (RequestState(rid, tuple(ids), p.stop, p.skip_special_tokens), [])
            self.core.add(Sequence(rid, list(ids), replace(p)))
        while self.core.has_unfinished():
            for step in self.core.step():
                state, outs = states[step.seq.request_id]
                if state.finished:
                    continue
                out = state.process(self.tokenizer, step)
                outs.append(out)
                if out.finished and step.seq.finish_reason is None:
                    self.core.abort(step.seq.request_id)
        return [self._merge(*states[rid]) for rid in order]

    @staticmethod
    def _merge(state: RequestState, outs: list[RequestOutput]) -> Completion:
        last = outs[-1]
        logprobs = None if outs[0].new_logprobs is None else [lp for o in outs for lp in (o.new_logprobs or ())]
        return Completion(
            prompt_token_ids=list(state.prompt_token_ids),
            token_ids=[t for o in outs for t in o.new_token_ids],
            text="".join(o.new_text for o in outs),
            finish_reason=last.finish_reason,
            stop_reason=last.stop_reason,
            logprobs=logprobs,
            prompt_logprobs=None if outs[0].prompt_logprobs is None else list(outs[0].prompt_logprobs),
            num_cached_tokens=outs[0].num_cached_tokens,
        )

    def chat_prompt(self, messages: list[dict], tools: list[dict] | None = None) -> list[int]:
        """Token ids of a conversation rendered with the model's chat template."""
        return self.tokenizer.encode(self.tokenizer.apply_chat_template(messages, tools=tools))
