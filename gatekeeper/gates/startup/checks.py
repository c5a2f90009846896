"""Gate 1's checks and what each found, typed: the check ids other code reads (gate 5's rules,
the correctness table, matrix path records, bisect, the report's "what changed"), in one place,
and one finding per check whose fields are its metric keys (`gatekeeper/gates/finding.py`:
written once, here). The gate builds each finding and hands it to `ctx.check`, which records its `metrics()`; a reader (bisect's
launch time, the report, a stored summary.json) takes it back with `TheFinding.of(check)`.

Per target: `startup.ready.<role>` (`ReadyFinding`), `startup.health.<role>` and
`startup.models.<role>` (`EndpointFinding`), `startup.version.<role>` (`VersionFinding`),
`startup.canary.<role>` (`CanaryFinding`), `startup.protocol.<role>` (`ProtocolFinding`); a request
that failed is a `RequestFailed` (`gates/finding.py`, shared) (or `UnreadableAnswer`: not JSON). Then `startup.capabilities`
(`CapabilitiesFinding`), `startup.execution_path` (`ExecutionPathFinding`), `startup.path_change`
(`PathChangeFinding`), `startup.log_rules` (`LogRulesFinding`), `startup.new_warnings`
(`NewWarningsFinding`).

Renaming an id here renames it everywhere; a literal `startup.…` id outside this package is a
test failure (tests/repo/test_contracts.py); the findings' tests:
tests/gates/startup/test_startup_findings.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gatekeeper.capabilities import FEATURES, Capabilities
from gatekeeper.gates.finding import OPTIONAL, Finding

GATE = "startup"


def ready(role: str) -> str:
    """`startup.ready.<role>`: the target became ready (or did not: FAIL / the reference's ERROR)."""
    return f"{GATE}.ready.{role}"


def canary(role: str) -> str:
    """`startup.canary.<role>`: the target answered the deterministic canary as expected."""
    return f"{GATE}.canary.{role}"


READY_REFERENCE = ready("reference")
READY_CANDIDATE = ready("candidate")
CANARY_CANDIDATE = canary("candidate")
CAPABILITIES = f"{GATE}.capabilities"  # the candidate supports every feature the reference does
EXECUTION_PATH = f"{GATE}.execution_path"  # what each target states it runs agrees with what it is judged by
PATH_CHANGE = f"{GATE}.path_change"  # an execution-path change the policy does not explain
LOG_RULES = f"{GATE}.log_rules"  # candidate log lines matching a policy rule
NEW_WARNINGS = f"{GATE}.new_warnings"  # warning lines the reference's log does not print


@dataclass(frozen=True, kw_only=True)
class ReadyFinding(Finding):
    """`startup.ready.<role>`: seconds until the target became ready (None: a URL target, or it never did)."""

    startup_s: float | None = None


@dataclass(frozen=True, kw_only=True)
class EndpointFinding(Finding):
    """`startup.health.<role>` or `startup.models.<role>`: the HTTP status the endpoint answered,
    and `missing` (True) where a server has no `/health` (readiness judged by `/v1/models`)."""

    status_code: int | None
    missing: bool | None = field(default=None, metadata=OPTIONAL)


@dataclass(frozen=True, kw_only=True)
class UnreadableAnswer(Finding):
    """`startup.models.<role>`: `/v1/models` or `/version` answered something that is not JSON."""

    error_kind: str


@dataclass(frozen=True, kw_only=True)
class VersionFinding(Finding):
    """`startup.version.<role>`: the version `/version` reports (None: none)."""

    version: str | None


@dataclass(frozen=True, kw_only=True)
class CanaryFinding(Finding):
    """`startup.canary.<role>`: how long the canary took (waits included where it was asked again)
    and how many times it was asked again after a transient failure."""

    first_request_s: float
    retried: int


@dataclass(frozen=True, kw_only=True)
class ProtocolFinding(Finding):
    """`startup.protocol.<role>`: each probed feature (True: it works; the fields are
    `capabilities.FEATURES`, in order) and the probe requests asked again after a transient failure."""

    chat: bool
    completions: bool
    logprobs: bool
    echo: bool
    prompt_logprobs: bool
    tools: bool
    tool_parsing: bool
    streaming: bool
    stream_finish_reason: bool
    tokenize: bool
    retried: int

    @classmethod
    def probed(cls, caps: Capabilities) -> ProtocolFinding:
        """What the probe found on one target."""
        return cls(**{n: getattr(caps, n) for n in FEATURES}, retried=len(caps.retried))


@dataclass(frozen=True, kw_only=True)
class CapabilitiesFinding(Finding):
    """`startup.capabilities`: the features the reference has and the candidate lost (as the
    check names them), those only the candidate has, and those neither has."""

    lost: tuple[str, ...]
    gained: tuple[str, ...]
    neither: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class ExecutionPathFinding(Finding):
    """`startup.execution_path`: the path each target states (role → key → value), and how many
    stated keys disagree with the path it is judged by."""

    observed: Mapping[str, Mapping[str, str]]
    disagreements: int


@dataclass(frozen=True, kw_only=True)
class PathChangeFinding(Finding):
    """`startup.path_change`: the path keys both targets state, those that changed, the fallback
    lines only the candidate prints, and the changes the policy does not explain."""

    keys_compared: int
    key_changes: int
    fallback_lines: int
    unexplained: int


@dataclass(frozen=True, kw_only=True)
class LogRulesFinding(Finding):
    """`startup.log_rules`: candidate log lines (not printed by the reference) matching a policy rule."""

    matches: int


@dataclass(frozen=True, kw_only=True)
class NewWarningsFinding(Finding):
    """`startup.new_warnings`: distinct warning lines (normalised) the reference's log does not print."""

    new_warnings: int
