"""How a golden case becomes a request: one place, so the gate and baseline recording agree.

Always greedy (temperature 0, sent explicitly: servers such as vLLM otherwise take the model's
generation config), with the case's own max_tokens, tools and tool_choice.
"""

from __future__ import annotations

from gatekeeper.client import Endpoint
from gatekeeper.golden.golden_set import GoldenCase
from gatekeeper.responses import ChatResponse


def ask(endpoint: Endpoint, case: GoldenCase, stream: bool = False, seed: int | None = None) -> ChatResponse:
    """Send one case to an endpoint (greedy); raises EndpointError on transport or HTTP failure."""
    return endpoint.chat(
        [dict(m) for m in case.messages],
        max_tokens=case.max_tokens,
        temperature=0.0,
        stream=stream,
        tools=[dict(t) for t in case.tools] if case.tools else None,
        tool_choice=case.tool_choice,
        seed=seed,
    )
