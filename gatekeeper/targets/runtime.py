"""A started target as the run knows it: how it started, its log so far, whether it is alive.

The runner fills one per role once the targets are up; gate 1 (startup) reads them, and the
liveness check asks `alive()` when a gate's requests fail. A URL target has no process: it is
always alive as far as this value knows, and has a log only when the run config names one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(kw_only=True)
class TargetRuntime:
    """What the runner knows about a started target (for the startup gate)."""

    role: str
    kind: str
    description: str
    startup_s: float | None = None
    dtype: str = "float32"
    ready: bool = True
    start_error: str | None = None
    log_lines: list[str] = field(default_factory=list)
    alive: Callable[[], bool] = lambda: True
    has_log: bool = True  # False: a URL target that names no log_file / log_command
    log_error: str | None = None  # why its log could not be read
    assumed: dict[str, str] = field(default_factory=dict)  # the path gatekeeper judges it by (declared, engine options)
