"""The next step for each cause of a HOLD, as the verdict's reasons end it: "Next: …".

A HOLD means a question went unanswered; its reason says which, and the next step says what would
answer it, naming the setting or the command. The gate that asked knows best (`Gate.next_step`:
gate 5 names its extension, the performance gate its launch rounds; the command to ask that gate
again follows); otherwise the step follows the check's status:

- the reference stopped answering (`<gate>.reference_unusable`): it is the yardstick, so restart
  it, read its log, re-run;
- an ERROR: the check could not run — its evidence and the targets' logs say why; a transient fault
  re-runs clean, so re-run that gate;
- a blocking SKIP: the candidate lacks what the check needs — serve it, or make the check advisory
  in the policy (`checks: [{match: <id>, blocking: false}]`);
- an undecided check: more evidence decides it — re-run that gate with another `--seed`, and see
  the check's own reason for how much more;
- an advisory FAIL (a gate's coverage below its floor): the gate's "not judged" reasons name what
  was lost; fix that, re-run the gate.

A reason that already ends in its own "Next:" (a death both builds share) gets no second one.
"""

from __future__ import annotations

from collections.abc import Callable

from gatekeeper.config.policy import Policy
from gatekeeper.gates.registry import GATES
from gatekeeper.results import CheckResult, Status

UNUSABLE = ".reference_unusable"  # the runner's check when the reference stopped answering (run/liveness.py)


def stepper(policy: Policy) -> Callable[[CheckResult], str | None]:
    """The next step for a check that HOLDs a run under `policy` (None: nothing to add)."""

    def step(check: CheckResult) -> str | None:
        if "Next:" in check.reason:
            return None
        gate = GATES.get(check.gate)
        if gate is not None and check.gate in policy.gates:
            own = gate.next_step(check, policy.settings(check.gate))
            if own:
                return f"{own}; then {rerun(check.gate)}"
        return generic(check)

    return step


def rerun(gate: str) -> str:
    """The command that asks one gate again: the run's own options with `--gates startup,<gate>`."""
    return f"`gatekeeper run` with the same options and `--gates startup,{gate}`" if gate != "startup" else \
        "`gatekeeper run` with the same options and `--gates startup`"


def generic(check: CheckResult) -> str | None:
    """The step a check's status calls for, where its gate names none."""
    if check.id.endswith(UNUSABLE):
        return ("the reference is the yardstick: read reference.log in the run directory, restart or fix it, and re-run "
                "(nothing after it was judged)")
    if check.status is Status.ERROR:
        return (f"read this check's evidence (correctness.html#check-{check.id}) and the targets' logs; a transient "
                f"fault re-runs clean: {rerun(check.gate)}")
    if check.status is Status.SKIP and check.blocking:
        return (f"serve what the check needs on the candidate, or make it advisory in the policy "
                f"(checks: [{{match: \"{check.id}\", blocking: false}}])")
    if check.undecided:
        return f"more evidence decides it (this reason says how much): {rerun(check.gate)} and another --seed"
    if check.status is Status.FAIL and not check.blocking:
        return f"the gate's \"not judged\" reasons say what was lost; fix that and re-run: {rerun(check.gate)}"
    return None
