"""A stored answer's JSON, checked: what the pair store reads back (its rows, an imported
file's `pair` keys) becomes an Answer only when it has `Answer.to_dict`'s shape, every key of
its type; anything else is a ValueError saying what is wrong (the store names the pair or line).
"""

from __future__ import annotations

import json
import math
from typing import Any

from gatekeeper.traffic.answers import Answer

_ANSWER_KEYS = ("text", "calls", "finish_reason", "tokens", "e2e_s", "ttft_s", "nonfinite", "error")


def answer_of_json(value: Any, what: str) -> Answer:
    """A stored answer (`Answer.to_dict`'s shape: every key, each of its type) as an Answer;
    ValueError saying what is wrong, `what` (reference, candidate, twin) first."""
    if not isinstance(value, dict):
        raise ValueError(f"{what}: an answer must be an object (got {type(value).__name__})")
    missing = [k for k in _ANSWER_KEYS if k not in value]
    unknown = sorted(set(value) - set(_ANSWER_KEYS))
    if missing or unknown:
        raise ValueError(f"{what}: " + (f"missing key {missing[0]!r}" if missing else f"unknown key {unknown[0]!r}")
                         + f" (an answer holds {', '.join(_ANSWER_KEYS)})")
    calls = value["calls"]
    checks = {"text": isinstance(value["text"], str),
              "calls": isinstance(calls, list) and all(isinstance(c, list) and len(c) == 2 and all(isinstance(x, str) for x in c)
                                                        for c in calls),
              "finish_reason": value["finish_reason"] is None or isinstance(value["finish_reason"], str),
              "tokens": value["tokens"] is None or (isinstance(value["tokens"], int) and not isinstance(value["tokens"], bool)),
              "e2e_s": _seconds(value["e2e_s"]) and value["e2e_s"] is not None,
              "ttft_s": value["ttft_s"] is None or _seconds(value["ttft_s"]),
              "nonfinite": isinstance(value["nonfinite"], bool),
              "error": value["error"] is None or isinstance(value["error"], str)}
    wanted = {"text": "a string", "calls": "a list of [name, arguments] strings", "finish_reason": "a string or null",
              "tokens": "an integer or null", "e2e_s": "seconds (a finite number >= 0)",
              "ttft_s": "seconds (a finite number >= 0) or null", "nonfinite": "true or false", "error": "a string or null"}
    for key, ok in checks.items():
        if not ok:
            raise ValueError(f"{what}: {key} must be {wanted[key]} (got {json.dumps(value[key])[:40]})")
    return Answer.from_dict(value)


def _seconds(value: Any) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)
                             and math.isfinite(value) and value >= 0)


def json_of_text(text: Any, what: str) -> Any:
    if not isinstance(text, str):
        raise ValueError(f"{what} is not JSON text (a {type(text).__name__} value)")
    try:
        return json.loads(text)
    except ValueError as e:
        raise ValueError(f"{what} is not JSON ({e.args[0].split(':')[0]})") from None
    except RecursionError:
        raise ValueError(f"{what} is JSON nested too deeply") from None
