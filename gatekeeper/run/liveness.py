"""What the runner finds out about each target after a gate: still answering, process alive, engine dead.

One value per gate, recorded (answers/liveness.jsonl) so that a rejudge reaches the same
conclusion without asking: `gone` (the target stopped answering: its process exited or it no
longer accepts connections), `alive` (its process runs), `tail` (a stopped candidate's last log
lines), `died` (an engine declared dead by its endpoint while the server kept answering:
gatekeeper/endpoints/dead.py), `death_log` (the log lines around the death, per role) and
`known` (per role, the root causes other launches of that role's build died of earlier in the run,
e.g. gate 4's batch-features copies, each with the gate it happened in).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gatekeeper.json_types import JsonObject
from gatekeeper.endpoints.client import Endpoint
from gatekeeper.endpoints.dead import DeadEngine
from gatekeeper.evidence import Log
from gatekeeper.gates.finding import Finding
from gatekeeper.gates.interface import GateContext
from gatekeeper.results import Status
from gatekeeper.endpoints import engine_death
from gatekeeper.targets.interface import Target

ROLES = ("reference", "candidate")
"""The run's two targets (the runner's, too)."""


@dataclass(frozen=True, kw_only=True)
class StoppedFinding(Finding):
    """`<gate>.candidate_crashed` for a candidate that stopped answering: whether its process lives."""

    process_alive: bool


@dataclass(frozen=True, kw_only=True)
class CrashFinding(StoppedFinding):
    """`<gate>.candidate_crashed` for a candidate whose engine died: when, after how many failures
    in a row, what /health answered, and the gate in which a launch of the reference's build died
    of the same root cause (None: never, the death is the candidate's)."""

    since: str
    failed_in_a_row: int
    health: str
    shared_with_reference_build: str | None


@dataclass(frozen=True)
class Liveness:
    """Each target's state after one gate (keys: the run's roles)."""

    gone: dict[str, bool]
    alive: dict[str, bool]
    tail: list[str] = field(default_factory=list)
    died: dict[str, DeadEngine] = field(default_factory=dict)
    death_log: dict[str, list[str]] = field(default_factory=dict)
    known: dict[str, dict[str, str]] = field(default_factory=dict)  # role -> {cause signature: gate id}

    def shared_death(self, cause: str | None) -> str | None:
        """The gate in which a launch of the reference's build died of `cause` too (None: never)."""
        return self.known.get("reference", {}).get(engine_death.signature(cause)) if cause else None

    def to_json(self) -> JsonObject:
        """The recorded form (a line of answers/liveness.jsonl, with the gate id beside it)."""
        return {"gone": self.gone, "alive": self.alive, "tail": self.tail,
                "died": {role: d.to_json() for role, d in self.died.items()}, "death_log": self.death_log,
                "known": self.known}

    @classmethod
    def from_json(cls, r: dict[str, Any]) -> "Liveness":
        """The inverse of `to_json` (older recordings carry no `died` or `known`)."""
        return cls(dict(r["gone"]), dict(r["alive"]), list(r.get("tail", [])),
                   {role: DeadEngine.from_json(d) for role, d in r.get("died", {}).items()},
                   {role: list(lines) for role, lines in r.get("death_log", {}).items()},
                   {role: dict(causes) for role, causes in r.get("known", {}).items()})


def judge(ctx: GateContext, after: Liveness) -> bool:
    """What the targets' state after a gate makes of it, written as the gate's first check: a
    candidate whose engine died (or that stopped answering) while the reference answers is a
    blocking FAIL `<gate>.candidate_crashed`, with the log around its death → ROLLBACK, unless a
    launch of the reference's build died of the same root cause earlier in the run (a defect both
    builds share, not the candidate's regression: ERROR → HOLD); a reference that died or stopped
    is `<gate>.reference_unusable` (ERROR → HOLD). Whether the run must stop."""
    gone, alive, tail, died = after.gone, after.alive, after.tail, after.died
    if "candidate" in died and "reference" not in died and not gone["reference"]:
        dead = died["candidate"]
        log = after.death_log.get("candidate", [])
        cause = engine_death.root_cause(log)
        shared = after.shared_death(cause)
        ctx.check("candidate_crashed", Status.FAIL if shared is None else Status.ERROR,
                  dead.describe() + (f"; its log says: {cause}" if cause else "")
                  + ("; it was sent no more work while the reference kept answering" if shared is None else
                     f"; a launch of the reference's build died of the same cause in gate {shared}: a defect both "
                     "builds share, not a regression of the candidate, and what followed cannot be judged. Next: "
                     "re-run (this traffic met the defect's trigger by chance), or gate a release that fixes it"),
                  CrashFinding(process_alive=alive["candidate"], since=dead.since, failed_in_a_row=dead.failed,
                               health=dead.health, shared_with_reference_build=shared),
                  [Log("candidate log around its death", log)] if log else [])
        ctx.checks.insert(0, ctx.checks.pop())  # the cause first: the gate's statistics of what followed come second
    elif gone["candidate"] and not gone["reference"] and "reference" not in died:
        how = "its process exited" if not alive["candidate"] else "it no longer accepts connections"
        ctx.check("candidate_crashed", Status.FAIL, f"the candidate stopped answering during gate {ctx.gate_id} "
                  f"({how}) while the reference kept answering", StoppedFinding(process_alive=alive["candidate"]),
                  [Log("candidate log tail", tail)] if tail else [])
        ctx.checks.insert(0, ctx.checks.pop())
    elif gone["reference"] or "reference" in died:
        both = " and so did the candidate" if gone["candidate"] or "candidate" in died else ""
        how = f" ({died['reference'].describe()})" if "reference" in died else ""
        ctx.check("reference_unusable", Status.ERROR, f"reference unusable: the reference stopped answering during "
                  f"gate {ctx.gate_id}{both}{how}; nothing after it can be judged")
    return any(gone.values()) or bool(died)


def note_copy_deaths(known: dict[str, dict[str, str]], gate_id: str, extra: Sequence[Endpoint],
                     targets: Mapping[str, Target]) -> None:
    """Add to `known` the root causes the engines a gate launched beside the run's own died of, per
    build, the build read from the launch's role: `reference-batch` and `candidate-batch` (gate 4's
    batch-features copies), `reference-replica` (gate 5's twin), `candidate-for-performance-N`; the
    performance gate's `baseline-N` is not read as the reference's (that gate runs last: nothing
    after it could be blamed). The first gate a cause was seen in is kept."""
    for ep in extra:
        base, target = ep.role.split("-")[0], targets.get(ep.role)
        if base in ROLES and target is not None and ep.streak.confirm() is not None:
            cause = engine_death.root_cause(engine_death.evidence(target.log_lines(), 0))
            if cause:
                known.setdefault(base, {}).setdefault(engine_death.signature(cause), gate_id)
