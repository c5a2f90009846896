"""Interleaved block measurement: one target at a time, counterbalanced pairs (A B, B A, …).

Pair i at a level sends the same seeded requests to both sides, back to back; even pairs start
with the baseline, odd ones with the candidate, so a drift of the machine over the run cancels
in the pair differences. At concurrency 1 the sides take turns request by request within the
pair (`run_alternating`), so the pair's halves are a request apart, not a block: on this 2-core
VM 4-request pairs taken that way spread by sd ~6% in log TPOT ratio (40 pairs of clean twins),
where whole blocks in turn gave 98% intervals implying ~8–12%.

Pairs 2k and 2k+1 send requests of the same lengths in other words (`Workload.requests`'
variants: a prefix cache cannot tell the repeat), so the baseline's two blocks of a set — the
noise floor — differ by the machine, not by what was asked. Nothing is sent to two targets at
once.

A launched side that keeps a core busy after it answers (`perf/quiet.py`: vLLM's worker spins
for a second) would be measured beside the other one's spin, request by request. The warm-up
watches each side for 0.2 s after its last answer; when one was not quiet, the sides take turns
block by block instead (at every level), and each block is sent only when the other side has
gone quiet (`settle`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from gatekeeper.perf.figures import Slo, block_figures
from gatekeeper.perf.loadgen import LoadProfile, LoadRequest, LoadResult, LoadTarget, run_alternating, run_load
from gatekeeper.perf.quiet import AFTER_S, QUIET_CORES, Wait, cores_used, wait_quiet
from gatekeeper.perf.workload import Workload

SIDES = ("baseline", "candidate")
CLIENT_LATE_S = 0.010
CLIENT_LATE_SHARE = 0.1


def client_bound(figures: dict[str, float | None]) -> bool:
    """A block whose client set the pace: p99 send lateness above 10 ms *and* above a tenth of
    the block's median request (a busy 2-core machine delays the client by milliseconds, which a
    300 ms request does not feel). Such a block's pair is left out of the comparison."""
    late = figures.get("lateness_p99_s") or 0.0
    return late > max(CLIENT_LATE_S, CLIENT_LATE_SHARE * (figures.get("e2e_p50_s") or 0.0))


NOT_QUIET = "not_quiet"  # a block figure: 1.0 when the block was sent with the other side still busy


def unquiet(figures: dict[str, float | None]) -> bool:
    """A block sent after the wait for quiet gave up (`perf/quiet.py`: the other side kept a
    core busy for `MOST_S`): it shared the cores with the other side, so its pair is left out."""
    return bool(figures.get(NOT_QUIET))


def left_out(figures: dict[str, float | None]) -> bool:
    """A block whose pair is not compared: the client paced it, or it ran beside a busy other side."""
    return client_bound(figures) or unquiet(figures)


@dataclass
class LevelBlocks:
    """One level's blocks: per side, the figures of each block in pair order, and the raw
    results (for the latency distributions)."""

    level: int
    figures: dict[str, list[dict[str, float | None]]] = field(default_factory=lambda: {s: [] for s in SIDES})
    results: dict[str, list[LoadResult]] = field(default_factory=lambda: {s: [] for s in SIDES})
    waits: list[Wait] = field(default_factory=list)  # the waits for the other side to go quiet (`settle`)

    def extend(self, more: LevelBlocks) -> None:
        """Add the blocks of another launch (its pairs after these)."""
        for side in SIDES:
            self.figures[side] += more.figures[side]
            self.results[side] += more.results[side]
        self.waits += more.waits

    def series(self, side: str, metric: str) -> list[float | None]:
        """One figure over a side's blocks, in pair order; None for a block left out (`left_out`)."""
        return [None if left_out(f) else f.get(metric) for f in self.figures[side]]

    def measured(self, metric: str) -> bool:
        """Whether any block of either side has the figure (CPU time only where both run here)."""
        return any(f.get(metric) is not None for side in SIDES for f in self.figures[side])

    def late_pairs(self) -> int:
        """Pairs with a block the client paced (left out of the comparison)."""
        return sum(1 for a, b in zip(self.figures["baseline"], self.figures["candidate"]) if client_bound(a) or client_bound(b))

    def unquiet_pairs(self) -> int:
        """Pairs with a block sent beside a busy other side (left out of the comparison)."""
        return sum(1 for a, b in zip(self.figures["baseline"], self.figures["candidate"])
                   if not (client_bound(a) or client_bound(b)) and (unquiet(a) or unquiet(b)))


@dataclass(frozen=True)
class WarmUp:
    """What the warm-up saw: per side, the cores its processes kept busy in the `AFTER_S` after
    its last answer (None: not launched here, not watched)."""

    after: dict[str, float | None]

    @property
    def busy(self) -> dict[str, float]:
        """The sides that were not quiet after answering, with the cores they kept busy."""
        return {side: c for side, c in self.after.items() if c is not None and c >= QUIET_CORES}

    @property
    def settle(self) -> bool:
        """Whether a side was not quiet after answering: the sides then take turns block by block."""
        return bool(self.busy)

    def why(self) -> str:
        """The note for a run that settles, e.g. "the candidate kept 0.98 cores busy in the 0.2 s after its last
        warm-up answer"."""
        busy = [f"the {side} kept {c:.2f} cores busy" for side, c in self.busy.items()]
        return (f"{' and '.join(busy)} in the {AFTER_S:g} s after its last warm-up answer (a server that polls for work): "
                "the sides take turns block by block, each block sent when the other side has gone quiet")


def warm_up(targets: dict[str, LoadTarget], requests: list[LoadRequest]) -> WarmUp:
    """Send a few requests to each side, unmeasured (first-request costs are not the engine's
    speed), and watch each launched side for `AFTER_S` after its last answer."""
    after: dict[str, float | None] = {}
    for side, target in targets.items():
        run_load(target, requests, LoadProfile("concurrent", concurrency=min(4, len(requests) or 1)))
        after[side] = cores_used([target.cpu], AFTER_S) if target.cpu is not None else None
    return WarmUp(after)


def measure_level(targets: dict[str, LoadTarget], level: int, pairs: int, per_block: int, workload: Workload,
                  seed: int, slo: Slo, progress: Callable[[str], None], first: int = 0, settle: bool = False) -> LevelBlocks:
    """`pairs` counterbalanced block pairs at concurrency `level`, numbered from `first` (an even
    number: a later launch's pairs go on where the earlier one's stopped); `settle`: block by
    block, each sent when the other side's launched processes have gone quiet."""
    out = LevelBlocks(level)
    profile = LoadProfile("synchronous" if level == 1 else "concurrent", concurrency=level)
    for i in range(first, first + pairs):
        requests = workload.requests(per_block, seed * 7919 + level * 131 + i // 2, variant=i % 2)
        order = SIDES if i % 2 == 0 else SIDES[::-1]
        loud: set[str] = set()  # the sides whose block was sent beside a busy other side
        if level == 1 and not settle:  # the sides take turns request by request: the pair's halves a request apart
            results = run_alternating(targets, requests, order)
        else:
            results = {}
            for side in order:
                if settle:
                    out.waits.append(wait_quiet([t.cpu for other, t in targets.items() if other != side and t.cpu]))
                    if not out.waits[-1].quiet:
                        loud.add(side)
                results[side] = run_load(targets[side], requests, profile)
        for side in SIDES:
            out.results[side].append(results[side])
            out.figures[side].append(block_figures(results[side], slo) | ({NOT_QUIET: 1.0} if side in loud else {}))
        progress(f"performance: concurrency {level}: pair {i + 1}/{first + pairs}")
    return out
