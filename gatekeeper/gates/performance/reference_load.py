"""What the performance gate sends a URL reference, for the dry run's warning
(`Gate.reference_load`): when the reference is its baseline (`baseline.choose`), the warm-up and
the measured blocks at each level, then the capacity sweep; each answer is `output_tokens`' upper
end long, and each level's requests go `level` at a time."""

from __future__ import annotations

from gatekeeper.gates.performance.baseline import choose
from gatekeeper.gates.performance.settings import PerformanceSettings
from gatekeeper.reference_load import ReferenceLoad
from gatekeeper.run_plan import RunPlan


def measured_load(performance: PerformanceSettings, plan: RunPlan) -> ReferenceLoad | None:
    """The gate's load on the reference, or None when the reference is not its baseline."""
    if choose(performance.baseline, plan.candidate, plan.reference).kind != "reference":
        return None
    measured = sum(performance.pairs_at(level) * performance.requests_per_block(level) for level in performance.levels)
    peak = max(*performance.levels, *performance.sweep)
    busy = (performance.warmup_requests
            + sum(performance.pairs_at(lv) * performance.requests_per_block(lv) / lv for lv in performance.levels)
            + sum(performance.requests_per_block(lv) / lv for lv in performance.sweep))
    what = (f"the performance gate (run when correctness passes) measures the reference as its baseline: "
            f"{performance.warmup_requests} warm-up and {measured} measured requests at concurrency "
            f"{', '.join(map(str, performance.levels))}, then a capacity sweep at concurrency "
            f"{', '.join(map(str, performance.sweep))}: peak concurrency {peak}")
    return ReferenceLoad(what, (performance.output_tokens[1],), times=busy)
