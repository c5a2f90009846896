"""Server-sent events as OpenAI streams them: `data: <json>` events, then `data: [DONE]`."""

from __future__ import annotations

import json
from typing import Any

DONE = "data: [DONE]\n\n"


def event(payload: dict[str, Any]) -> str:
    """One SSE event carrying a JSON chunk."""
    return f"data: {json.dumps(payload, ensure_ascii=False, allow_nan=True)}\n\n"
