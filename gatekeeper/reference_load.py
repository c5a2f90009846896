"""What a gate will send a URL reference (often a production server): the value a gate's
`reference_load(settings, plan)` returns and `gatekeeper run --dry-run` warns with
(`run/plan_warnings.py`), which scales it by one short answer's measured speed.

The duration estimate is each request's answer at that speed, `times` over, `at_once` at a time:
`sum(request_s(n) for n in answer_tokens) * times / at_once` (a server that slows under load
takes longer)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReferenceLoad:
    """One gate's load on the reference: `what` it sends (the warning's sentence after "load on
    the reference: "), the answer length in tokens of each request the estimate counts, how many
    `times` each is sent and how many `at_once`; `bound`: the lengths are each request's
    max_tokens, so the estimate is a bound (the warning says so)."""

    what: str
    answer_tokens: tuple[int, ...]
    times: float = 1
    at_once: int = 1
    bound: bool = False
