"""Which server the candidate's speed is compared with (the policy's `baseline`)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from gatekeeper.endpoints.client import Endpoint
from gatekeeper.errors import ConfigError
from gatekeeper.targets.interface import TargetSpec


@dataclass(frozen=True)
class BaselineChoice:
    """What to measure against: the reference as it runs, or fresh launches of `spec` — the
    candidate's own launch without its faults, or the reference's build where gatekeeper launches
    both sides (each launch round starts both afresh); `why` is the sentence the report shows."""

    kind: str  # "reference", "launch" or "none" (no performance baseline for this pair: not measured)
    why: str
    spec: TargetSpec | None = None


def choose(setting: str, candidate: TargetSpec, reference: TargetSpec) -> BaselineChoice:
    """Resolve `baseline: auto | reference | candidate-without-faults` for this pair. Under `auto`
    a real engine judged against the bundled reference has none: that reference is the trusted
    fp32 correctness path, not a build of the candidate's engine, so its speed says nothing about
    an upgrade (`baseline: reference` compares with it anyway)."""
    if setting == "auto" and candidate.kind != "bundled" and reference.kind == "bundled":
        return BaselineChoice("none", f"no performance baseline: the reference ({reference.describe()}) is the bundled "
                                      "engine's correctness path, not a build of the candidate's engine, so its speed "
                                      "says nothing about this candidate's; compare two builds of one engine, or set "
                                      "gates.performance.baseline: reference to measure against it anyway")
    if setting == "reference" or (setting == "auto" and candidate.kind != "bundled"):
        if "url" not in (candidate.kind, reference.kind):  # gatekeeper starts both: it can start them again
            return BaselineChoice("launch", f"the reference's build ({reference.describe()}), launched afresh beside the "
                                            "candidate's in each launch round", reference)
        return BaselineChoice("reference", f"the reference target ({reference.describe()})")
    if candidate.kind != "bundled":
        raise ConfigError("baseline candidate-without-faults needs a bundled candidate (a real engine's own build "
                          "without a bug is not something gatekeeper can launch): use baseline: reference",
                          key="gates.performance.baseline")
    spec = replace(candidate, faults=())
    return BaselineChoice("launch", f"the candidate's launch without faults ({spec.describe()}): the trusted reference "
                                    f"({reference.describe()}) is the correctness baseline, not a performance one", spec)


def baseline_endpoint(choice: BaselineChoice, reference: Endpoint, launch) -> Endpoint:
    """The endpoint to measure as the baseline (`launch(role, spec)` starts a target)."""
    if choice.kind == "reference":
        return reference
    assert choice.kind == "launch", choice
    assert choice.spec is not None
    return launch("baseline", choice.spec)
