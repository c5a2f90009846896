"""The next step for each cause of a HOLD, as the verdict's reasons end it: "Next: …".

A HOLD means a question went unanswered; its reason says which, and the next step says what would
answer it, naming the setting or the command. The gate that asked knows best (`Gate.next_step`:
gate 5 names its extension, the performance gate its launch rounds; the command that asks that
gate again, keeping the rest of the run, follows: `--resume RUN --redo GATE`); otherwise the step
follows the check's status:

- the reference stopped answering (`<gate>.reference_unusable`): it is the yardstick, so restart
  it, read its log, re-run;
- an ERROR: the check could not run — its evidence and the targets' logs say why; a transient fault
  re-runs clean, so re-run that gate;
- a blocking SKIP: the candidate lacks what the check needs — serve it, or make the check advisory
  in the policy (`checks: [{match: <id>, blocking: false}]`);
- an undecided check: more evidence decides it — ask that gate again, and see the check's own
  reason for how much more;
- an advisory FAIL (a gate's coverage below its floor): the gate's "not judged" reasons name what
  was lost; fix that, re-run the gate.

A reason that already ends in its own "Next:" (a death both builds share) gets no second one.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from gatekeeper.config.policy import Policy
from gatekeeper.gates.registry import GATES
from gatekeeper.results import CheckResult, Status

UNUSABLE = ".reference_unusable"  # the runner's check when the reference stopped answering (run/liveness.py)


def stepper(policy: Policy, run_dir: Path) -> Callable[[CheckResult], str | None]:
    """The next step for a check that HOLDs the run in `run_dir` under `policy` (None: nothing to add)."""

    def step(check: CheckResult) -> str | None:
        if "Next:" in check.reason:
            return None
        gate = GATES.get(check.gate)
        if gate is not None and check.gate in policy.gates:
            own = gate.next_step(check, policy.settings(check.gate))
            if own:
                return f"{own}; then {rerun(check.gate, run_dir)}"
        return generic(check, run_dir)

    return step


def rerun(gate: str, run_dir: Path) -> str:
    """The command that asks one gate of this run again, keeping the rest (`--resume … --redo`)."""
    return f"`gatekeeper run <the same options> --resume {run_dir} --redo {gate}`"


def generic(check: CheckResult, run_dir: Path) -> str | None:
    """The step a check's status calls for, where its gate names none."""
    if check.id.endswith(UNUSABLE):
        return ("the reference is the yardstick: read reference.log in the run directory, restart or fix it, and re-run "
                "(nothing after it was judged)")
    if check.status is Status.ERROR:
        return (f"read this check's evidence (correctness.html#check-{check.id}) and the targets' logs; a transient "
                f"fault re-runs clean: {rerun(check.gate, run_dir)}")
    if check.status is Status.SKIP and check.blocking:
        return (f"serve what the check needs on the candidate, or make it advisory in the policy "
                f"(checks: [{{match: \"{check.id}\", blocking: false}}])")
    if check.undecided:
        return f"more evidence decides it (this reason says how much): {rerun(check.gate, run_dir)}"
    if check.status is Status.FAIL and not check.blocking:
        return f"the gate's \"not judged\" reasons say what was lost; fix that and re-run: {rerun(check.gate, run_dir)}"
    return None
