"""The gates in stage order. Adding a gate is adding its file and one line here."""

from __future__ import annotations

from gatekeeper.errors import ConfigError
from gatekeeper.gates.golden import GoldenGate
from gatekeeper.gates.interface import Gate
from gatekeeper.gates.longctx import LongContextGate
from gatekeeper.gates.numerics import NumericsGate
from gatekeeper.gates.startup import StartupGate

GATES: dict[str, type[Gate]] = {cls.id: cls for cls in (StartupGate, NumericsGate, GoldenGate, LongContextGate)}


def gate_defaults() -> dict[str, dict]:
    """Default settings of every registered gate, for the policy loader."""
    return {gid: dict(getattr(cls, "defaults", {})) for gid, cls in GATES.items()}


def select(names: list[str] | None) -> list[type[Gate]]:
    """Gates by id in stage order; unknown ids are a ConfigError."""
    if not names:
        return sorted(GATES.values(), key=lambda g: g.stage)
    unknown = [n for n in names if n not in GATES]
    if unknown:
        raise ConfigError(f"unknown gate(s) {', '.join(unknown)} (known: {', '.join(GATES)})", key="--gates")
    return sorted((GATES[n] for n in names), key=lambda g: g.stage)
