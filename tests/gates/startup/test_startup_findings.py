"""Gate 1's findings (gates/startup/checks.py, gates/finding.py): each check's metrics are its
finding's `metrics()`, with the keys in the order the gate has always written them (the protocol
check's features in `capabilities.FEATURES` order); `of(check)` reads a finding back from a
recorded check or a stored summary.json, as bisect reads the launch time and the report the new
warnings."""

from __future__ import annotations

from findings_util import assert_keys_in_order, assert_round_trips

from gatekeeper.capabilities import FEATURES, Capabilities
from gatekeeper.gates.finding import Finding, RequestFailed
from gatekeeper.gates.startup import checks
from gatekeeper.gates.startup.checks import (CanaryFinding, CapabilitiesFinding, EndpointFinding, ExecutionPathFinding,
                                             LogRulesFinding, NewWarningsFinding, PathChangeFinding, ProtocolFinding,
                                             ReadyFinding, UnreadableAnswer, VersionFinding)
from gatekeeper.results import CheckResult, Status

PROTOCOL = ProtocolFinding.probed(Capabilities(chat=True, completions=True, logprobs=True, retried=("502",)))
FINDINGS: dict[str, Finding] = {
    checks.READY_CANDIDATE: ReadyFinding(startup_s=12.5),
    f"{checks.GATE}.health.candidate": EndpointFinding(status_code=404, missing=True),
    f"{checks.GATE}.models.candidate": EndpointFinding(status_code=200),
    f"{checks.GATE}.health.reference": RequestFailed(error_kind="refused", status_code=None),
    f"{checks.GATE}.models.reference": UnreadableAnswer(error_kind="malformed"),
    f"{checks.GATE}.version.candidate": VersionFinding(version="0.6.1"),
    checks.CANARY_CANDIDATE: CanaryFinding(first_request_s=0.25, retried=1),
    f"{checks.GATE}.protocol.candidate": PROTOCOL,
    checks.CAPABILITIES: CapabilitiesFinding(lost=("tools",), gained=(), neither=("tokenize",)),
    checks.EXECUTION_PATH: ExecutionPathFinding(observed={"candidate": {"dtype": "bfloat16"}, "reference": {}},
                                                disagreements=0),
    checks.PATH_CHANGE: PathChangeFinding(keys_compared=2, key_changes=1, fallback_lines=1, unexplained=1),
    checks.LOG_RULES: LogRulesFinding(matches=3),
    checks.NEW_WARNINGS: NewWarningsFinding(new_warnings=4),
}
KEYS = {
    checks.READY_CANDIDATE: "startup_s",
    f"{checks.GATE}.health.candidate": "status_code missing",
    f"{checks.GATE}.models.candidate": "status_code",
    f"{checks.GATE}.health.reference": "error_kind status_code",
    f"{checks.GATE}.models.reference": "error_kind",
    f"{checks.GATE}.version.candidate": "version",
    checks.CANARY_CANDIDATE: "first_request_s retried",
    f"{checks.GATE}.protocol.candidate": " ".join((*FEATURES, "retried")),
    checks.CAPABILITIES: "lost gained neither",
    checks.EXECUTION_PATH: "observed disagreements",
    checks.PATH_CHANGE: "keys_compared key_changes fallback_lines unexplained",
    checks.LOG_RULES: "matches",
    checks.NEW_WARNINGS: "new_warnings",
}


def test_each_finding_writes_the_keys_the_gate_always_wrote_in_order() -> None:
    assert_keys_in_order(FINDINGS, KEYS)
    assert PROTOCOL.metrics() == {**{n: n in ("chat", "completions", "logprobs") for n in FEATURES}, "retried": 1}
    assert FINDINGS[checks.CAPABILITIES].metrics()["lost"] == ["tools"]  # a list, as summary.json holds it


def test_a_finding_reads_back_what_it_wrote_in_memory_and_from_json() -> None:
    assert_round_trips(FINDINGS, checks.GATE)


def test_a_target_that_never_started_reads_no_launch_time() -> None:
    failed = CheckResult(id=checks.READY_CANDIDATE, gate=checks.GATE, status=Status.FAIL, blocking=True, reason="did not become ready",
                         metrics={"startup_s": None})
    assert ReadyFinding.of(failed).startup_s is None
    assert NewWarningsFinding.of(CheckResult(id=checks.NEW_WARNINGS, gate=checks.GATE, status=Status.SKIP, blocking=True, reason="",
                                             metrics={})).new_warnings is None
