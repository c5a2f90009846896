"""What the runner finds out about each target after a gate: still answering, process alive, engine dead.

One value per gate, recorded (answers/liveness.jsonl) so that a rejudge reaches the same
conclusion without asking: `gone` (the target stopped answering: its process exited or it no
longer accepts connections), `alive` (its process runs), `tail` (a stopped candidate's last log
lines), `died` (an engine declared dead by its endpoint while the server kept answering:
gatekeeper/endpoints/dead.py) and `death_log` (the log lines around the death, per role).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gatekeeper.endpoints.dead import DeadEngine


@dataclass(frozen=True)
class Liveness:
    """Each target's state after one gate (keys: the run's roles)."""

    gone: dict[str, bool]
    alive: dict[str, bool]
    tail: list[str] = field(default_factory=list)
    died: dict[str, DeadEngine] = field(default_factory=dict)
    death_log: dict[str, list[str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The recorded form (a line of answers/liveness.jsonl, with the gate id beside it)."""
        return {"gone": self.gone, "alive": self.alive, "tail": self.tail,
                "died": {role: d.to_json() for role, d in self.died.items()}, "death_log": self.death_log}

    @classmethod
    def from_json(cls, r: dict[str, Any]) -> "Liveness":
        """The inverse of `to_json` (older recordings carry no `died`)."""
        return cls(dict(r["gone"]), dict(r["alive"]), list(r.get("tail", [])),
                   {role: DeadEngine.from_json(d) for role, d in r.get("died", {}).items()},
                   {role: list(lines) for role, lines in r.get("death_log", {}).items()})
