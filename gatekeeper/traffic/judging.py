"""Judging pairs that are already stored — a replay's, or (the live shadow proxy's) a pair store's:
the same measures and analysis as a replay, over a stream of pairs read twice (once to fix the
slices and split alpha, as a replay fixes them from its requests, once to judge), so no more than
one pair is ever in memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from gatekeeper.traffic.analysis import CRITICAL, Analysis, SliceKey, Thresholds, slice_keys
from gatekeeper.traffic.measures import Pair, measure


@dataclass(frozen=True)
class RequestFacts:
    """What fixes a request's slices and the measures that apply, known before any answer."""

    tenant: str
    kind: str
    model_alias: str
    sampled: bool
    wants_json: bool
    has_tools: bool
    wants_logprobs: bool


class SlicePlanner:
    """The slices a stream of requests makes, counted as the requests arrive (`add`): the live
    verdict keeps one and adds only the pairs stored since its last look. `plan` is what
    `slice_plan` returns for the requests added so far."""

    def __init__(self) -> None:
        self.count: dict[SliceKey, int] = {}
        self.applies: dict[SliceKey, set[str]] = {}
        self.total = 0

    def add(self, r: RequestFacts) -> None:
        """One more request."""
        self.total += 1
        extra = {m for m, on in (("json_parse", r.wants_json), ("tool_parse", r.has_tools),
                                 ("nonfinite", r.wants_logprobs)) if on}
        for key in slice_keys(r.tenant, r.kind, r.model_alias, r.sampled):
            self.count[key] = self.count.get(key, 0) + 1
            # task_failure applies to every request: each can be checked for a refusal where the reference answers
            self.applies.setdefault(key, {"disagreement", "task_failure", "degeneration", "error", "retry"}).update(extra)
            # The near-tie rate is a numerical path's, not a tenant's: judged over all greedy traffic only (a
            # declared bf16 build parts at a near tie on 16% of tool-call answers and 4% of all, measured).
            if key.dimension == "all" and not r.sampled:
                self.applies[key].add("near_tie")

    def copy(self) -> SlicePlanner:
        """An independent planner with the same counts (to plan ahead without committing)."""
        out = SlicePlanner()
        out.count, out.total = dict(self.count), self.total
        out.applies = {key: set(ms) for key, ms in self.applies.items()}
        return out

    def plan(self, min_requests: int) -> list[tuple[SliceKey, frozenset[str]]]:
        """The slices judged, in the order they first appeared, with the critical measures that
        apply to each. A slice with fewer than `min_requests`, or the same requests as `all`,
        is not judged on its own."""
        return [(key, frozenset(m for m in CRITICAL if m in self.applies[key])) for key, n in self.count.items()
                if key.dimension == "all" or (n >= min_requests and n != self.total)]


def slice_plan(requests: Iterable[RequestFacts], min_requests: int) -> list[tuple[SliceKey, frozenset[str]]]:
    """The slices judged and the critical measures that apply to each, from the requests alone
    (the alpha split must not depend on outcomes); see `SlicePlanner.plan`."""
    planner = SlicePlanner()
    for r in requests:
        planner.add(r)
    return planner.plan(min_requests)


def facts_of(p: Pair) -> RequestFacts:
    """A stored pair's request facts."""
    return RequestFacts(p.tenant, p.kind, p.model_alias, p.sampled, p.wants_json, bool(p.tools), p.wants_logprobs)


def judge_pairs(pairs: Callable[[], Iterable[Pair]], t: Thresholds, min_slice_requests: int,
                split: Callable[[list[tuple[SliceKey, frozenset[str]]]], dict[tuple[SliceKey, str], float]] | None = None,
                ) -> Analysis:
    """The analysis of stored pairs; `pairs()` is called twice and must yield the same pairs
    in the same order (the order is the sequential test's looks). `split` gives the alpha per
    (slice, measure) for the plan (default: `allocate`, fixed by this judgement alone)."""
    plan = slice_plan((facts_of(p) for p in pairs()), min_slice_requests)
    analysis = Analysis(plan, t, split(plan) if split is not None else None)
    for p in pairs():
        analysis.add(p, measure(p))
    return analysis
