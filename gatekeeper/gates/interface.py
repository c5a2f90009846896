"""The extension point for gates: a `Gate` runs its checks against a `GateContext`.

A gate never renders and never touches argv or the exit code: it reads the context (the two
endpoints, its policy section, the probed capabilities, the golden sets) and reports checks
through `ctx.check(...)`, which applies the policy's blocking rule and writes the record to
disk at once, so a crash loses nothing.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, TypeVar

from gatekeeper.client import Endpoint
from gatekeeper.errors import EndpointError
from gatekeeper.results import CheckResult, Evidence, Status

T = TypeVar("T")
R = TypeVar("R")


@dataclass
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


@dataclass
class GateContext:
    """Everything a gate may use. `settings` is the gate's own section of the policy."""

    gate_id: str
    reference: Endpoint
    candidate: Endpoint
    settings: dict[str, Any]
    blocking_rule: Callable[[str], bool]
    capabilities: dict[str, dict[str, Any]]
    golden: list[Any]
    seed: int
    runtimes: dict[str, TargetRuntime]
    record: Callable[[CheckResult], None]
    progress: Callable[[str], None] = lambda msg: None
    checks: list[CheckResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def endpoints(self) -> dict[str, Endpoint]:
        """Both endpoints by role."""
        return {"reference": self.reference, "candidate": self.candidate}

    def check(
        self,
        name: str,
        status: Status,
        reason: str,
        metrics: dict[str, Any] | None = None,
        evidence: Iterable[Evidence] = (),
        family: str | None = None,
        started: float | None = None,
    ) -> CheckResult:
        """Record one check `<gate>.<name>` with the policy's blocking rule applied."""
        check_id = f"{self.gate_id}.{name}"
        result = CheckResult(
            id=check_id,
            gate=self.gate_id,
            status=status,
            blocking=self.blocking_rule(check_id),
            reason=reason,
            metrics=dict(metrics or {}),
            evidence=tuple(evidence),
            family=family,
            duration_s=0.0 if started is None else time.perf_counter() - started,
        )
        self.checks.append(result)
        self.record(result)
        return result

    def error_check(self, name: str, error: EndpointError, family: str | None = None) -> CheckResult:
        """Record a check that could not run because an endpoint failed (status ERROR)."""
        return self.check(name, Status.ERROR, str(error), {"error_kind": error.kind, "status_code": error.status}, family=family)

    def skip(self, name: str, reason: str, family: str | None = None) -> CheckResult:
        """Record a check that was not run, with its reason (SKIP)."""
        return self.check(name, Status.SKIP, reason, family=family)

    def parallel(self, fn: Callable[[T], R], items: list[T], concurrency: int) -> list[R | EndpointError]:
        """Run fn over items on `concurrency` threads; EndpointErrors are returned, not raised."""

        def safe(item: T) -> R | EndpointError:
            try:
                return fn(item)
            except EndpointError as e:
                return e

        if concurrency <= 1:
            return [safe(i) for i in items]
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            return list(pool.map(safe, items))


class Gate(ABC):
    """A staged gate. Subclasses set `id`, `stage`, `title` and write `run`; the module
    docstring says what the gate checks, why, and what a failure looks like (shown in the
    report)."""

    id: str
    stage: int
    title: str

    @abstractmethod
    def run(self, ctx: GateContext) -> None:
        """Run the checks, reporting each through `ctx.check` / `ctx.skip` / `ctx.error_check`."""
