"""The extension point for targets: something that can be started, reached and stopped."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass


@dataclass
class Started:
    """The outcome of starting a target: where it answers, or why it did not come up."""

    base_url: str
    model: str | None
    ready: bool
    startup_s: float | None = None
    error: str | None = None
    log_path: str | None = None


@dataclass(frozen=True)
class TargetSpec:
    """A target as configured. `kind` is "bundled", "url" or "launch".

    bundled: `profile`, `engine_options` (EngineArgs names → values), `faults`, `model`;
    url: `url`, `model`, `api_key_env` (the NAME of the variable holding the key);
    launch: `command` (template with {port} and {model}), `env`, `cwd`, `health_path`.
    """

    kind: str
    profile: str = "optimized"
    model: str | None = None
    url: str | None = None
    api_key_env: str | None = None
    command: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    health_path: str = "/health"
    ready_timeout_s: float = 180.0
    engine_options: tuple[tuple[str, str], ...] = ()
    faults: tuple[str, ...] = ()

    def describe(self) -> str:
        """A one-line, secret-free description for reports."""
        if self.kind == "bundled":
            opts = " ".join(f"{k}={v}" for k, v in self.engine_options)
            faults = f" faults={','.join(self.faults)}" if self.faults else ""
            return f"bundled:{self.profile}" + (f" {opts}" if opts else "") + faults
        if self.kind == "url":
            return f"url {self.url}"
        return f"launch `{self.command}`"

    @property
    def dtype(self) -> str:
        """The candidate's activation dtype as configured (float32 when unknown)."""
        aliases = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "fp64": "float64"}
        value = dict(self.engine_options).get("dtype", "float32")
        return aliases.get(value, value)


class Target(ABC):
    """A running (or reachable) engine."""

    spec: TargetSpec
    role: str

    @abstractmethod
    def start(self, log_dir: str) -> Started:
        """Start (or reach) the engine and wait until it is ready; never raises for a target
        that fails to come up — the failure is returned for the startup gate to report."""

    @abstractmethod
    def stop(self) -> None:
        """Stop the engine if gatekeeper started it."""

    def log_lines(self) -> list[str]:
        """Lines the engine printed so far (empty for targets without a log)."""
        return []

    def alive(self) -> bool:
        """Whether the engine process is still running (True when unknown)."""
        return True

    def api_key(self) -> str | None:
        """The API key, read from the environment variable the spec names."""
        return None
