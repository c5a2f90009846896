"""A request's identity: which endpoint method, with which arguments (the model id aside)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

# Methods whose answers depend only on the request and the model (cacheable across runs); raw GETs
# (/health, /metrics, /version) describe the server's state now and are never reused across runs.
ANSWERS = frozenset({"chat", "completion", "tokenize", "post_json"})


def request_key(method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """A short stable hash of the method and its arguments (keyword order does not matter)."""
    text = json.dumps([method, list(args), kwargs], sort_keys=True, separators=(",", ":"), default=repr)
    return method + ":" + hashlib.sha256(text.encode()).hexdigest()[:24]
