"""How a golden case becomes a request: one place, so the gate and baseline recording agree.

Always greedy (temperature 0, sent explicitly: servers such as vLLM otherwise take the model's
generation config), with the case's own max_tokens, tools, tool_choice and response_format. `Asker` adds a circuit
breaker: after a few consecutive connection failures or timeouts it stops sending to an endpoint
that is evidently gone, so a dead or hung server costs seconds, not a timeout per case; the cases
not sent still become ERROR checks.
"""

from __future__ import annotations

import threading

from gatekeeper.endpoints.client import Endpoint
from gatekeeper.errors import EndpointError
from gatekeeper.golden.golden_set import GoldenCase
from gatekeeper.endpoints.responses import ChatResponse

_UNREACHABLE = ("connect", "timeout")


def ask(endpoint: Endpoint, case: GoldenCase, stream: bool = False, seed: int | None = None,
        top_logprobs: int = 0) -> ChatResponse:
    """Send one case to an endpoint (greedy); `top_logprobs` > 0 also asks for each token's
    logprob and that many alternatives. Raises EndpointError on transport or HTTP failure."""
    return endpoint.chat(
        [m.copy() for m in case.messages],
        max_tokens=case.max_tokens,
        temperature=0.0,
        stream=stream,
        logprobs=top_logprobs > 0,
        top_logprobs=top_logprobs,
        tools=[t.copy() for t in case.tools] if case.tools else None,
        tool_choice=case.tool_choice,
        seed=seed,
        extra={"response_format": case.response_format} if case.response_format else None,
    )


class Asker:
    """`ask` for one endpoint with a circuit breaker (thread-safe): after `max_unreachable`
    consecutive connect/timeout errors, later calls raise at once without a request."""

    def __init__(self, endpoint: Endpoint, seed: int | None = None, max_unreachable: int = 3):
        self.endpoint, self.seed, self.max_unreachable = endpoint, seed, max_unreachable
        self._failures = 0
        self._last: EndpointError | None = None
        self._lock = threading.Lock()

    def __call__(self, case: GoldenCase, stream: bool = False) -> ChatResponse:
        """One case's answer; EndpointError if it fails or the breaker is open."""
        with self._lock:
            if self._failures >= self.max_unreachable and self._last is not None:
                raise EndpointError(self._last.kind, self._last.url,
                                    f"not sent: the {self.endpoint.role} stopped answering "
                                    f"({self._failures} consecutive failures, last: {self._last.detail})")
        try:
            answer = ask(self.endpoint, case, stream, self.seed)
        except EndpointError as e:
            with self._lock:
                if e.kind in _UNREACHABLE:
                    self._failures += 1
                    self._last = e
            raise
        with self._lock:
            self._failures = 0
        return answer
