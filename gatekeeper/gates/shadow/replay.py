"""Replaying recorded requests: which requests a stage draws, and how one is sent.

A request is sent as recorded, except: `model` becomes the target's served model; `max_tokens`
is capped (`max_tokens_cap`); `n` is 1; a sampled request (temperature above 0; absent means 1,
as in the OpenAI API) gets a fixed `seed` derived from its id when it has none, so a target that
honours seeds answers it reproducibly — and one that does not shows it in the noise floor, where
the twin disagrees with the reference as often as a resample does (the comparison is then
distributional: the candidate is held to the reference's own resampling rate). A streamed
request is replayed streamed.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from typing import Any

from gatekeeper.endpoints.client import Endpoint
from gatekeeper.errors import EndpointError
from gatekeeper.endpoints.fanout import fan_out
from gatekeeper.traffic.answers import Answer, answer_of
from gatekeeper.traffic.settings import Stage
from gatekeeper.traffic.format import TrafficRecord

_DROPPED = ("model", "messages", "prompt", "stream", "stream_options", "n", "max_tokens", "max_completion_tokens",
            "temperature", "seed", "tools", "tool_choice")


def _unit(text: str) -> float:
    """A number in [0, 1) from a string, stable across runs and machines."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") / 2**64


def stage_selection(records: Sequence[TrafficRecord], stage: Stage, seed: int, done: set[str]) -> list[TrafficRecord]:
    """The requests a stage replays, in file order: those matching its filters and falling in
    its `share` (a seeded hash of the id, so a wider share contains a narrower one), not replayed
    by an earlier stage, at most `budget`."""
    out = []
    for r in records:
        if r.id in done:
            continue
        if stage.tenants is not None and r.tenant not in stage.tenants:
            continue
        if stage.kinds is not None and r.kind not in stage.kinds:
            continue
        if stage.models is not None and r.model_alias not in stage.models:
            continue
        if _unit(f"{seed}:{r.id}") >= stage.share:
            continue
        out.append(r)
        if len(out) == stage.budget:
            break
    return out


def request_seed(record: TrafficRecord) -> int:
    """The seed a sampled request without one is replayed with."""
    return int(_unit(f"seed:{record.id}") * 2**31)


def capped_max_tokens(req: dict[str, Any], cap: int) -> int:
    """The recorded `max_tokens` (or `max_completion_tokens`), at most `cap`."""
    asked = req.get("max_tokens", req.get("max_completion_tokens"))
    return min(asked, cap) if isinstance(asked, int) and asked > 0 else cap


def request_extra(req: dict[str, Any]) -> dict[str, Any]:
    """The recorded request's fields the client does not set itself (response_format, stop, ...)."""
    return {k: v for k, v in req.items() if k not in _DROPPED}


def send(ep: Endpoint, record: TrafficRecord, max_tokens_cap: int) -> Answer:
    """One recorded request to one target (a failure is an Answer with `error`)."""
    req: dict[str, Any] = record.request
    max_tokens = capped_max_tokens(req, max_tokens_cap)
    temperature = req.get("temperature", 1.0)
    seed = req.get("seed", request_seed(record) if record.sampled else None)
    extra = request_extra(req)
    try:
        if record.endpoint == "chat":
            resp: Any = ep.chat(req["messages"], max_tokens=max_tokens, temperature=temperature,
                                stream=bool(req.get("stream")), tools=req.get("tools"), tool_choice=req.get("tool_choice"),
                                seed=seed, extra=extra)
        else:
            resp = ep.completion(req["prompt"], max_tokens=max_tokens, temperature=temperature,
                                 extra={**extra, **({"seed": seed} if seed is not None else {})})
    except EndpointError as e:  # fan_out's rule: a failure is this item's answer
        return answer_of(e)
    return answer_of(resp)


def send_all(ep: Endpoint, records: Sequence[TrafficRecord], concurrency: int, max_tokens_cap: int,
             offsets: Sequence[float] | None = None) -> list[Answer]:
    """Every record to one target at `concurrency`, answers in the records' order. With
    `offsets` (seconds from the start, per record), each is sent no earlier than its offset."""
    if offsets is None:
        return _answers(fan_out(lambda r: send(ep, r, max_tokens_cap), records, concurrency))
    start = time.monotonic()

    def timed(i: int) -> Answer:
        delay = start + offsets[i] - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        return send(ep, records[i], max_tokens_cap)

    return _answers(fan_out(timed, list(range(len(records))), max(concurrency, 1)))


def _answers(results: Sequence[Answer | EndpointError]) -> list[Answer]:
    return [answer_of(r) if isinstance(r, EndpointError) else r for r in results]


def offsets_of(records: Sequence[TrafficRecord], time_scale: float) -> list[float] | None:
    """Each record's recorded offset from the first, scaled; None when any lacks a timestamp."""
    stamps = [r.timestamp for r in records]
    if not stamps or any(s is None for s in stamps):
        return None
    first = min(s for s in stamps if s is not None)
    return [((s or first) - first) * time_scale for s in stamps]

