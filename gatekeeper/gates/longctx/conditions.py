"""The KV-cache reuse bug's trigger conditions (docs/bug-classes.md#kv-reuse-triggers), as the decay
run actually exercised them on the candidate.

A stale-KV-block bug shows only when several conditions meet: prefix caching serving hits, many
sessions in flight at once, a KV pool too small for every session's history (so cached blocks
are evicted and rewritten between a session's rounds), prompt lengths at and around block
boundaries, and uneven growth per round. Each is judged from evidence — the target's metrics,
the `cached_tokens` it reports per request, the gate's own in-flight count, the lengths sent —
and is present, absent or unknown. When the candidate passes, the absent ones say what the pass
does not cover.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

SEED_CONCURRENCY = 8  # "more than 8 concurrent requests": docs/bug-classes.md#kv-reuse-triggers


@dataclass(frozen=True)
class Condition:
    """One trigger condition: present (True), absent (False) or unknown (None), and why."""

    name: str
    present: bool | None
    detail: str

    @property
    def label(self) -> str:
        """"present" / "absent" / "unknown"."""
        return {True: "present", False: "absent", None: "unknown"}[self.present]


def concurrency(peak: int, sessions: int, running: float | None) -> Condition:
    """Sessions in flight at once, from the gate's count (and the target's running gauge)."""
    seen = f"; the target reported up to {running:g} running" if running is not None else ""
    note = "" if peak > SEED_CONCURRENCY else f" (the KV-reuse bug needs more than {SEED_CONCURRENCY})"
    return Condition("concurrency", peak > 1, f"peak {peak} of {sessions} sessions' requests in flight{seen}{note}")


def prefix_caching(hits: float | None, queries: float | None, cached: int | None) -> Condition:
    """Prefix-cache hits, from vllm:prefix_cache_hits/queries deltas or per-request cached_tokens."""
    if hits is not None and queries is not None:
        rate = hits / queries if queries else 0.0
        return Condition("prefix caching", hits > 0,
                         f"vllm:prefix_cache_hits rose by {hits:.0f} of {queries:.0f} queried tokens ({rate:.0%})")
    if cached is not None:
        return Condition("prefix caching", cached > 0, f"the responses report {cached} cached prompt tokens in total")
    return Condition("prefix caching", None, "no prefix-cache metrics and no cached_tokens in the responses")


def eviction_pressure(working_set: int, pool: int | None, evicted: float | None, usage: float | None) -> Condition:
    """Whether the histories of the sessions in flight together outgrow the KV pool, so a
    session's cached blocks are evicted and rewritten between its rounds."""
    seen = (f"; {evicted:.0f} cached blocks evicted" if evicted is not None else "") + (
        f"; KV usage peaked at {usage:.0%}" if usage is not None else "")
    if pool is None:
        return Condition("eviction pressure", None,
                         f"concurrent histories total {working_set} tokens; the KV pool size is not exposed{seen}")
    return Condition("eviction pressure", working_set > pool,
                     f"concurrent histories total {working_set} tokens against a KV pool of {pool} tokens{seen}")


def block_boundaries(sessions: list[list[int]], block: int) -> Condition:
    """Requests sent at B·k−1, B·k or B·k+1 tokens, and block boundaries crossed between rounds
    (`sessions`: each session's request lengths in round order)."""
    lengths = [n for sess in sessions for n in sess]
    at = sum(1 for n in lengths if n % block in (block - 1, 0, 1))
    crossed = sum(b // block - a // block for sess in sessions for a, b in itertools.pairwise(sess))
    return Condition("block-boundary lengths", at > 0, f"{at} of {len(lengths)} requests at B·k−1/B·k/B·k+1 (B={block}); "
                                                      f"{crossed} block boundaries crossed between rounds")


def uneven_growth(growths: list[int]) -> Condition:
    """Growth per round between a session's requests."""
    if not growths:
        return Condition("uneven growth", False, "one round per session")
    lo, hi = min(growths), max(growths)
    return Condition("uneven growth", hi >= 4 * max(lo, 1), f"history grew by {lo} to {hi} tokens per round")
