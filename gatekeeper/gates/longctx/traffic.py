"""Sending the same requests to both targets at once, and counting what was in flight.

Gate 4 sends each target the identical request list; the two targets are driven at the same
time (each from its own threads), which halves the wall time on a shared machine and keeps the
candidate's traffic pattern independent of the reference's speed. `Flight` records the peak
number of requests a target had in flight — the concurrency the run actually exercised.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Self, TypeVar

from gatekeeper.endpoints.chat_types import ChatMessage
from gatekeeper.endpoints.client import Endpoint
from gatekeeper.errors import EndpointError, gist, refused_alike
from gatekeeper.endpoints.fanout import fan_out
from gatekeeper.stats.noise import Passes, ask_twice
from gatekeeper.endpoints.responses import ChatResponse

T = TypeVar("T")
Answer = ChatResponse | EndpointError


class Flight:
    """Counts requests in flight and remembers the peak."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.now = 0
        self.peak = 0

    def __enter__(self) -> Self:
        with self._lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self.now -= 1


def chat(ep: Endpoint, messages: Sequence[ChatMessage], *, flight: Flight | None = None, **kw: Any) -> Answer:
    """One greedy chat request; an EndpointError is returned, not raised."""
    try:
        if flight is None:
            return ep.chat(messages, temperature=0.0, **kw)
        with flight:
            return ep.chat(messages, temperature=0.0, **kw)
    except EndpointError as e:
        return e


def both(run: Callable[[Endpoint], T], reference: Endpoint, candidate: Endpoint,
         run_candidate: Callable[[Endpoint], Any] | None = None) -> tuple[T, Any]:
    """run(reference) and run(candidate) — or run_candidate(candidate) — at the same time;
    returns (reference's, candidate's)."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        ref = pool.submit(run, reference)
        cand = pool.submit(run_candidate or run, candidate)
        return ref.result(), cand.result()


def cached_tokens(answer: Answer) -> int | None:
    """`usage.prompt_tokens_details.cached_tokens` of a non-streamed answer, when reported."""
    if not isinstance(answer, ChatResponse) or not answer.raw:
        return None
    details = (answer.raw.get("usage") or {}).get("prompt_tokens_details") or {}
    value = details.get("cached_tokens")
    return value if isinstance(value, int) else None


def non_finite(answer: Answer) -> int:
    """How many logprobs of an answer are NaN or infinite (0 when none were returned; a null
    logprob is missing, not NaN — see `missing_logprobs`)."""
    if not isinstance(answer, ChatResponse) or not answer.logprobs:
        return 0
    return sum(1 for t in answer.logprobs if t.logprob is not None and not math.isfinite(t.logprob))


def missing_logprobs(answer: Answer) -> int:
    """How many tokens of an answer came with a null logprob."""
    if not isinstance(answer, ChatResponse) or not answer.logprobs:
        return 0
    return sum(1 for t in answer.logprobs if t.logprob is None)


def text(answer: Answer) -> str:
    """An answer's text with surrounding whitespace removed ("" for a failed request)."""
    return answer.text.strip() if isinstance(answer, ChatResponse) else ""


def prompt_span(answers: list[Answer]) -> str:
    """The range of prompt lengths the target reported, e.g. "612-980"."""
    n = [a.prompt_tokens for a in answers if isinstance(a, ChatResponse) and a.prompt_tokens]
    return f"{min(n)}-{max(n)}" if n else "unreported"


def refused_by_both(ref: list[Answer], cand: list[Answer], *more: list[Answer]) -> EndpointError | None:
    """The refusal when both targets refused every request of a check alike (same HTTP 4xx per
    request, in every pass): a request feature neither serves, not judged but not an ERROR."""
    if not ref or len(ref) != len(cand):
        return None
    rows = [refused_alike(a, b, *(g[i] for g in more if i < len(g))) for i, (a, b) in enumerate(zip(ref, cand))]
    return rows[0] if all(rows) else None


def refused_each(ref: list[Answer], cand: list[Answer], *more: list[Answer]) -> list[EndpointError | None]:
    """Per request of a check: the refusal when both targets refused it alike in every pass
    (`refused_alike`: the same refusal status, or bodies saying the same thing), else None. A
    request neither serves (a parameter, a prompt past both contexts) is set aside, not judged,
    and the check judges the rest."""
    return [refused_alike(a, b, *(g[i] for g in more if i < len(g))) for i, (a, b) in enumerate(zip(ref, cand))]


def kept(answers: list[T], refused: list[EndpointError | None]) -> list[T]:
    """The items of a list (indexed as the check's requests) that no target refused alike."""
    return [a for a, r in zip(answers, refused) if r is None]


def refused_note(refused: list[EndpointError | None]) -> str:
    """"; 5 of 25 requests both targets refuse alike (HTTP 400: ...): not judged", or "" when none was."""
    first = next((r for r in refused if r is not None), None)
    if first is None:
        return ""
    n = sum(r is not None for r in refused)
    return (f"; {n} of {len(refused)} requests both targets refuse alike (HTTP {first.status}: {(gist(first) or first.detail)[:160]}): "
            "not judged")


def first_error(*groups: list[Answer]) -> EndpointError | None:
    """The first failed request among the answer lists, if any. Gates pass the reference's
    noise-floor pass too: a request that failed there is an ERROR, never "noise, not judged"."""
    return next((a for g in groups for a in g if isinstance(a, EndpointError)), None)


def failed_requests(*groups: list[Answer]) -> int:
    """How many requests among the answer lists failed (coverage says how many items they lost)."""
    return sum(1 for g in groups for a in g if isinstance(a, EndpointError))


class Watched:
    """The candidate's endpoint as gate 4 uses it: every chat asks for the chosen tokens'
    logprobs (when the target offers them) and NaN/Inf among them is counted, so a poisoned
    cache is named wherever in the gate it shows. Everything else is the wrapped endpoint's."""

    def __init__(self, endpoint: Endpoint, logprobs: bool) -> None:
        self.endpoint, self.logprobs = endpoint, logprobs
        self._lock = threading.Lock()
        self.answers = 0
        self.non_finite = 0
        self.missing = 0
        self.answers_hit = 0
        self.example = ""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.endpoint, name)

    def chat(self, messages: Sequence[ChatMessage], **kw: Any) -> ChatResponse:
        """The wrapped chat, with logprobs requested and checked."""
        if self.logprobs and not kw.get("logprobs"):
            kw.update(logprobs=True, top_logprobs=0)
        answer = self.endpoint.chat(messages, **kw)
        bad = non_finite(answer)
        with self._lock:
            self.answers += 1
            self.missing += missing_logprobs(answer)
            if bad:
                self.non_finite += bad
                self.answers_hit += 1
                self.example = self.example or answer.text[:60]
        return answer


def side_by_side(ask: Callable[[Endpoint, T], Any], items: list[T], reference: Endpoint, candidate: Endpoint,
                 concurrency: int, noise_floor_concurrency: int) -> tuple[list[Any], list[Any] | None, list[Any]]:
    """Every item asked of both targets at the same time: the reference through `ask_twice` (the
    noise-floor pass unless `noise_floor_concurrency` is 0), the candidate once. Returns
    (reference's answers, the reference's second pass or None, candidate's answers)."""
    passes, cand = both(lambda ep: ask_twice(lambda item: ask(ep, item), items, concurrency, noise_floor_concurrency),
                        reference, candidate, lambda ep: fan_out(lambda item: ask(ep, item), items, concurrency))
    return passes.first, passes.second, cand


def unstable(first: list[Answer], second: list[Answer] | None) -> list[bool]:
    """Per item: whether the reference's two passes answered differently (all False without a second pass)."""
    return Passes(first, second).unrepeated(lambda a, b: text(a) == text(b))
