"""What an engine hands back for a request: token-level updates with their logprobs."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TokenLogprob:
    """The logprob of one token at one position, with the top alternatives there.

    `top` holds (token_id, logprob) pairs sorted by descending logprob; `rank` is the 1-based
    rank of `token_id` in the full distribution.
    """

    token_id: int
    logprob: float
    rank: int
    top: tuple[tuple[int, float], ...] = ()


@dataclass(frozen=True)
class RequestOutput:
    """One update for a request, as produced by the engine frontend.

    `new_token_ids` are the tokens generated since the previous update and `new_text` their text
    (stop strings already cut, text held back while it could still become a stop string).
    `prompt_logprobs` comes with the first update only (element 0 is None, as in vLLM).
    `finish_reason` is "stop", "length" or "abort" once `finished`; `stop_reason` is the stop
    string or stop token id that ended it, if any.
    """

    request_id: str
    prompt_token_ids: tuple[int, ...]
    new_token_ids: tuple[int, ...]
    new_text: str
    new_logprobs: tuple[TokenLogprob, ...] | None
    prompt_logprobs: tuple[TokenLogprob | None, ...] | None
    finished: bool
    finish_reason: str | None = None
    stop_reason: int | str | None = None
    num_cached_tokens: int = 0
