"""Gate 5's settings for the live proxy, read from a gate policy without importing a gate.

The live commands (`gatekeeper shadow`, its mirror's `/verdict`, `gatekeeper shadow verdict`)
judge pairs with the `shadow:` section of the policy a run would use: the same file, found the
same way, its top-level keys, version, blocking rules and the `shadow:` section checked as a run
checks them (a ConfigError names the file, line and key). The other gates' sections are only
checked to name a gate (the gates the shipped policy schema lists, kept current by a test);
their settings are the run's to check.
"""

from __future__ import annotations

from gatekeeper import schemas
from gatekeeper.config.policy import load_section
from gatekeeper.config.run_config import find_file
from gatekeeper.traffic.settings import ShadowSettings

SHADOW = "shadow"  # gate 5's id: its section of the policy


def shadow_settings(policy: str) -> ShadowSettings:
    """The typed `shadow:` settings of the policy at `policy` (found as a run finds it)."""
    gates = schemas.load("policy.schema.json")["properties"]["gates"]["properties"]
    settings: ShadowSettings = load_section(find_file(policy), SHADOW, ShadowSettings, [g for g in gates if g != SHADOW])
    return settings
