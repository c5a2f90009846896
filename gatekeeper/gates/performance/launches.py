"""Where the performance gate's load goes: each side's endpoint and load target, launch by launch.

Where gatekeeper launches both sides, both are fresh launches in every round: the bundled pair's
of the same flags (the candidate's without its faults as the baseline), a launched engine pair's
of the reference's and the candidate's commands. Otherwise (a URL on either side) the baseline is
the reference target and the candidate the run's candidate, one process each. CPU time is
metered only where both sides run on this machine.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from gatekeeper.endpoints.client import Endpoint
from gatekeeper.gates.interface import GateContext
from gatekeeper.gates.performance.baseline import BaselineChoice, baseline_endpoint
from gatekeeper.perf.cpu import CpuMeter
from gatekeeper.perf.loadgen import LoadTarget


def roles(launch: int) -> tuple[str, str]:
    """The baseline's and the candidate's roles in launch round `launch` (1-based)."""
    suffix = "" if launch == 1 else f"-{launch}"
    return f"baseline{suffix}", f"candidate-for-performance{suffix}"


def sides(ctx: GateContext, choice: BaselineChoice, launch: int, candidate_first: bool = False) -> tuple[Endpoint, Endpoint]:
    """The baseline's and the candidate's endpoints for launch number `launch` (1-based). Both
    come up at once (two vLLM 0.31.0 launches took 41 and 47 s side by side here, 47–50 s each one
    after the other: a round's launches were most of its time); the candidate's is started first
    if `candidate_first` (a launch-order effect must not be a bias)."""
    if choice.kind != "launch" or ctx.run.launch is None:
        return baseline_endpoint(choice, ctx.reference, ctx.run.launch), ctx.candidate
    # A fresh baseline beside a candidate that served gates 1-5 compares states, not builds:
    # the used one's full prefix cache evicts on every allocation (a clean candidate measured
    # 2.1% slower at c1 that way). Both sides are fresh launches.
    base_role, cand_role = roles(launch)
    assert choice.spec is not None
    launch_one = ctx.run.launch
    order = [(base_role, choice.spec), (cand_role, ctx.run.specs["candidate"])]
    with ThreadPoolExecutor(2) as pool:  # leaving the block waits for both, also when one failed
        started = {role: pool.submit(launch_one, role, spec) for role, spec in (order[::-1] if candidate_first else order)}
        return started[base_role].result(), started[cand_role].result()


def load_targets(ctx: GateContext, choice: BaselineChoice, base_ep: Endpoint, cand_ep: Endpoint) -> dict[str, LoadTarget]:
    """The load generator's targets for two endpoints, with CPU meters where both run here."""
    base_key = (choice.spec or ctx.run.specs["reference"]).api_key()
    meters = {ep.role: CpuMeter.of_group(ctx.run.process_group(ep.role)) for ep in (base_ep, cand_ep)}
    if None in meters.values():  # CPU time compares only where both sides run here
        meters = {role: None for role in meters}
    return {"baseline": LoadTarget(base_ep.base_url, base_ep.model, base_key, ctx.candidate.timeout_s,
                                   meters[base_ep.role]),
            "candidate": LoadTarget(cand_ep.base_url, cand_ep.model, ctx.run.specs["candidate"].api_key(),
                                    ctx.candidate.timeout_s, meters[cand_ep.role])}
