"""The log evidence of an engine that died during a gate: its root cause and the lines around it.

A launched engine's log is captured from its start. When the endpoint declares the engine dead
(gatekeeper/endpoints/dead.py), the lines the gate added to the log hold the story: vLLM prints
the engine core's traceback, ending in its root cause (e.g. "RuntimeError: CPU Generator does not
use offset"), then "EngineDeadError" for every later request. `evidence` finds the first traceback
or error line the gate added and returns the lines around it; `root_cause` the first exception
line that is not the death notice itself.
"""

from __future__ import annotations

import re

_FIRST = re.compile(r"Traceback \(most recent call last\)|\bERROR\b|\bFATAL\b|\bpanic\b|EngineDeadError|Segmentation fault")
_EXCEPTION = re.compile(r"\b([A-Z]\w*(?:Error|Exception)): (.+)")
_NOT_ROOT = ("EngineDeadError", "EngineGenerateError")
BEFORE, AFTER = 5, 45  # lines kept around the first error line
_VARYING = re.compile(r"0x[0-9a-fA-F]+|\d+")


def evidence(lines: list[str], start: int) -> list[str]:
    """The lines around the first error line at or after `start` (the log's length when the gate
    began); the last lines when none is found."""
    new = lines[start:]
    first = next((i for i, line in enumerate(new) if _FIRST.search(line)), None)
    if first is None:
        return new[-40:]
    return new[max(0, first - BEFORE):first + AFTER]


def root_cause(lines: list[str]) -> str | None:
    """The first "SomethingError: message" in `lines` that is not the engine's death notice."""
    for line in lines:
        m = _EXCEPTION.search(line)
        if m and m.group(1) not in _NOT_ROOT:
            return f"{m.group(1)}: {m.group(2)}".strip()[:300]
    return None


def signature(cause: str) -> str:
    """A root cause with its numbers and addresses blanked: two launches that die of one defect
    print the same signature (request ids, token counts and pointers differ)."""
    return _VARYING.sub("#", cause)
