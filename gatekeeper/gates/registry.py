"""The gates in stage order: the only list of them. Adding a gate is adding its package under
`gatekeeper/gates/` and one entry here."""

from __future__ import annotations

from gatekeeper.errors import ConfigError
from gatekeeper.gates.golden.gate import GoldenGate
from gatekeeper.gates.interface import Gate
from gatekeeper.gates.longctx.gate import LongContextGate
from gatekeeper.gates.numerics.gate import NumericsGate
from gatekeeper.gates.performance.gate import PerformanceGate
from gatekeeper.gates.shadow.gate import ShadowGate
from gatekeeper.gates.startup.gate import StartupGate

GATES: dict[str, type[Gate]] = {cls.id: cls for cls in (StartupGate, NumericsGate, GoldenGate, LongContextGate,
                                                        ShadowGate, PerformanceGate)}


def settings_types() -> dict[str, type]:
    """Each registered gate's settings dataclass, for the policy loader."""
    return {gid: cls.Settings for gid, cls in GATES.items()}


def select(names: list[str] | tuple[str, ...] | None) -> list[type[Gate]]:
    """Gates by id in stage order; unknown ids are a ConfigError."""
    if not names:
        return sorted(GATES.values(), key=lambda g: g.stage)
    unknown = [n for n in names if n not in GATES]
    if unknown:
        raise ConfigError(f"unknown gate(s) {', '.join(unknown)} (known: {', '.join(GATES)})", key="--gates")
    return sorted((GATES[n] for n in names), key=lambda g: g.stage)
