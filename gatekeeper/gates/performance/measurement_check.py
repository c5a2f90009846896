"""`performance.measurement`: whether the measured figures describe the two servers.

ERROR when the baseline failed requests under load (its figures are no baseline); WARN, with the
comparisons left unjudged, when most block pairs were paced by the client (it fell behind its
schedule) or sent beside a busy other side (the wait for quiet gave up: `perf/quiet.py`); PASS
otherwise, stating the pairs left out for either reason, the waits for quiet, and answers without
a token.
"""

from __future__ import annotations

import numpy as np

from gatekeeper.detection import tolerance
from gatekeeper.gates.interface import GateContext
from gatekeeper.gates.performance import checks
from gatekeeper.gates.performance.checks import MeasurementFinding, QuietWaits
from gatekeeper.perf.measure import SIDES, LevelBlocks
from gatekeeper.perf.quiet import MOST_S, QUIET_CORES
from gatekeeper.perf.workload import Workload
from gatekeeper.results import Judgement, Status


def measurement_check(ctx: GateContext, levels: list[LevelBlocks], baseline: str, workload: Workload) -> tuple[bool, str]:
    """`performance.measurement`: whether the figures describe the servers. Returns (valid, why not)."""
    blocks = [f for lv in levels for side in SIDES for f in lv.figures[side]]
    late = max((f.get("lateness_p99_s") or 0.0) for f in blocks)
    late_pairs = sum(lv.late_pairs() for lv in levels)
    loud_pairs = sum(lv.unquiet_pairs() for lv in levels)
    pairs = sum(len(lv.figures["baseline"]) for lv in levels)
    # A failure is a request that got no answer (an HTTP error, a timeout, a broken stream). An answer
    # without tokens is an answer: the model ended it at once (a server that does not honour
    # ignore_eos, as llama-cpp-python's does not); the figures count tokens, so it weighs on both sides.
    rows = {side: [r for lv in levels for res in lv.results[side] for r in res.measured] for side in SIDES}
    base_errors = sum(1 for r in rows["baseline"] if r.error)
    empty = {side: sum(1 for r in rows[side] if not r.error and not r.output_tokens) for side in SIDES}
    per_side = {side: int(sum((f.get("requests") or 0.0) for lv in levels for f in lv.figures[side])) for side in SIDES}
    waits = [w for lv in levels for w in lv.waits]
    quiet_waits, settled = None, ""
    if waits:
        loud = sum(1 for w in waits if not w.quiet)
        median = float(np.median([w.seconds for w in waits]))
        quiet_waits = QuietWaits(blocks=len(waits), median_s=median, total_s=sum(w.seconds for w in waits), not_quiet=loud)
        settled = (f"; taken block by block, {len(waits)} blocks sent when the other side had gone quiet (median "
                   f"wait {median:.2f} s"
                   + (f"; {loud} sent after {MOST_S:g} s with the other side still busy, their {loud_pairs} "
                      "pair(s) left out" if loud else "") + ")")
    metrics = MeasurementFinding(
        baseline=baseline, lateness_p99_s=late, baseline_failed_requests=base_errors, empty_answers=empty,
        figures={f"c{lv.level}": {side: _means(lv.figures[side]) for side in SIDES} for lv in levels},
        requests_per_side=per_side, output_lengths_controlled=workload.ignore_eos, source=workload.source,
        input_sizing=workload.calibration, levels=tuple(lv.level for lv in levels),
        pairs={f"c{lv.level}": len(lv.figures["baseline"]) for lv in levels}, quiet_waits=quiet_waits,
        client_paced_pairs=None if base_errors else late_pairs, unquiet_pairs=None if base_errors else loud_pairs,
    )
    if base_errors:  # the pairs left out are not told: nothing is compared
        ctx.check(checks.MEASUREMENT, Status.ERROR, f"the baseline failed {base_errors:.0f} requests under load: its "
                  "figures are not a baseline", metrics)
        return False, "the baseline failed requests under load"
    if loud_pairs * 2 > pairs:
        ctx.check(checks.MEASUREMENT, Status.WARN, f"the other side was still busy when {loud_pairs} of {pairs} block "
                  f"pairs were sent (it kept ≥ {QUIET_CORES:g} core busy for {MOST_S:g} s): the two servers shared the "
                  "cores, so the figures are not each server's own", metrics)
        return False, "the other side never went quiet"
    if late_pairs * 2 > pairs:
        ctx.check(checks.MEASUREMENT, Status.WARN, f"the load generator fell behind its schedule in {late_pairs} of "
                  f"{pairs} block pairs (p99 lateness up to {late * 1000:.1f} ms, more than a tenth of a request): "
                  "the client, not the server, set the pace", metrics)
        return False, "the client was the bottleneck"
    ctx.check(checks.MEASUREMENT, Status.PASS, f"{per_side['candidate']} requests per side in counterbalanced pairs, one "
              f"target at a time; baseline: {baseline}"
              + (f"; {late_pairs} pair(s) the client paced left out" if late_pairs else "") + settled
              + ("" if workload.ignore_eos else
                                                           "; output lengths not controlled (no ignore_eos)")
              + (f"; answers without a token (the model ended them at once: ignore_eos not honoured): baseline "
                 f"{empty['baseline']}, candidate {empty['candidate']}" if any(empty.values()) else ""),
              metrics, judgement=Judgement.EXACT,
              limit=tolerance(0.5, "a share of block pairs paced by the client, or sent beside a busy other side, above",
                              pairs))
    return True, ""


def _means(blocks: list[dict[str, float | None]]) -> dict[str, float]:
    """Each figure's mean over a side's blocks (the figures the report shows beside the judged ones)."""
    values: dict[str, list[float]] = {}
    for block in blocks:
        for k, v in block.items():
            if v is not None:
                values.setdefault(k, []).append(v)
    return {k: float(np.mean(v)) for k, v in sorted(values.items())}
