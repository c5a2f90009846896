"""Turning a request's token stream into text deltas, cutting stop strings as OpenAI does.

Text is re-decoded from all output tokens (cheap at these lengths, and exact across multi-byte
characters); a trailing replacement character is held back until the next token completes it,
and so are the last few characters that could still grow into a stop string.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gatekeeper.engine.outputs import RequestOutput
from gatekeeper.engine.sequence import StepOutput
from gatekeeper.engine.tokenizer import Tokenizer


@dataclass
class RequestState:
    """Detokenization state of one request."""

    request_id: str
    prompt_token_ids: tuple[int, ...]
    stop: tuple[str, ...]
    skip_special_tokens: bool
    output_ids: list[int] = field(default_factory=list)
    emitted: int = 0  # characters of text already sent
    finished: bool = False

    def process(self, tok: Tokenizer, step: StepOutput) -> RequestOutput:
        """Fold one new token in; returns the update to send (finished if a stop string hit)."""
        seq = step.seq
        self.output_ids.append(step.token_id)
        text = tok.decode(self.output_ids, skip_special_tokens=self.skip_special_tokens)
        finish_reason, stop_reason = seq.finish_reason, seq.stop_reason
        end = len(text)
        for s in self.stop:
            idx = text.find(s, max(0, self.emitted - len(s) + 1))
            if idx != -1 and idx < end:
                end, finish_reason, stop_reason = idx, "stop", s
        finished = finish_reason is not None
        if not finished:
            if text.endswith("\ufffd"):
                end -= 1
            if self.stop:
                end = max(self.emitted, end - (max(len(s) for s in self.stop) - 1))
        new_text = text[self.emitted : max(end, self.emitted)]
        self.emitted = max(end, self.emitted)
        self.finished = finished
        return RequestOutput(
            request_id=self.request_id,
            prompt_token_ids=self.prompt_token_ids,
            new_token_ids=(step.token_id,),
            new_text=new_text,
            new_logprobs=None if step.logprob is None else (step.logprob,),
            prompt_logprobs=None if step.prompt_logprobs is None else tuple(step.prompt_logprobs),
            finished=finished,
            finish_reason=finish_reason,
            stop_reason=stop_reason,
            num_cached_tokens=seq.num_cached_tokens,
        )

