"""One target's answer to one replayed request, in the form pairs are measured and stored in.

Chat and completions answers, and failed requests, become the same small frozen value; it
round-trips through JSON (`to_dict` / `from_dict`) so that pairs can be stored and judged later
(the live shadow proxy's pair store) by exactly the code that judges a replay.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gatekeeper.json_types import JsonObject
from gatekeeper.errors import EndpointError
from gatekeeper.endpoints.responses import ChatResponse, CompletionResponse


@dataclass(frozen=True)
class Answer:
    """`text`, `calls` ((name, raw arguments) per tool call), `finish_reason`, `tokens` (the
    server's completion-token count), `e2e_s`/`ttft_s`, `nonfinite` (a returned logprob was NaN
    or infinite), `error` ("kind: message") for a request that failed, and `retries`: the times
    the server answered 502/503/504 and the request was sent again before this answer."""

    text: str = ""
    calls: tuple[tuple[str, str], ...] = ()
    finish_reason: str | None = None
    tokens: int | None = None
    e2e_s: float = 0.0
    ttft_s: float | None = None
    nonfinite: bool = False
    error: str | None = None
    retries: int = 0

    @property
    def failed(self) -> bool:
        """Whether the request failed (no answer to measure)."""
        return self.error is not None

    def to_dict(self) -> JsonObject:
        """JSON-ready form (the pair store's and the records' shape)."""
        return {"text": self.text, "calls": [list(c) for c in self.calls], "finish_reason": self.finish_reason,
                "tokens": self.tokens, "e2e_s": round(self.e2e_s, 4),
                "ttft_s": None if self.ttft_s is None else round(self.ttft_s, 4), "nonfinite": self.nonfinite,
                "error": self.error, **({"retries": self.retries} if self.retries else {})}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Answer:
        """The inverse of `to_dict`."""
        return cls(text=d.get("text") or "", calls=tuple((str(n), str(a)) for n, a in d.get("calls") or ()),
                   finish_reason=d.get("finish_reason"), tokens=d.get("tokens"), e2e_s=float(d.get("e2e_s") or 0.0),
                   ttft_s=d.get("ttft_s"), nonfinite=bool(d.get("nonfinite")), error=d.get("error"), retries=int(d.get("retries") or 0))


def _nonfinite(values: Any) -> bool:
    return any(v is not None and not math.isfinite(v) for v in values)


def answer_of(resp: ChatResponse | CompletionResponse | EndpointError) -> Answer:
    """The Answer for a client response or a failed request."""
    if isinstance(resp, EndpointError):
        return Answer(error=f"{resp.kind}: {resp.detail}"[:300])
    if isinstance(resp, ChatResponse):
        lps = [t.logprob for t in resp.logprobs or ()]
        return Answer(text=resp.text, calls=tuple((c.name, c.arguments) for c in resp.tool_calls), finish_reason=resp.finish_reason,
                      tokens=resp.completion_tokens, e2e_s=resp.e2e_s, ttft_s=resp.ttft_s, nonfinite=_nonfinite(lps), retries=resp.retries)
    return Answer(text=resp.text, calls=(), finish_reason=resp.finish_reason, tokens=resp.completion_tokens, e2e_s=resp.e2e_s,
                  ttft_s=resp.ttft_s, nonfinite=_nonfinite(resp.token_logprobs), retries=resp.retries)
