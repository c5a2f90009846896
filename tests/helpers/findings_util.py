"""The round trip every gate's findings are tested by: what a finding's `metrics()` writes reads
back equal, from a recorded check and from the JSON summary.json holds."""

from __future__ import annotations

import json
from collections.abc import Mapping

from gatekeeper.gates.finding import Finding
from gatekeeper.report.jsonable import to_jsonable
from gatekeeper.results import CheckResult, Status


def stored(metrics: dict[str, object]) -> dict[str, object]:
    """`metrics` as summary.json holds them."""
    return json.loads(json.dumps(to_jsonable(metrics)))


def assert_round_trips(findings: Mapping[str, Finding], gate: str) -> None:
    """Each finding (by its check id) read back from its check and from JSON is itself, and its
    metrics are JSON's own types already (lists, not tuples)."""
    for check_id, finding in findings.items():
        written = finding.metrics()
        assert type(finding).of(CheckResult(id=check_id, gate=gate, status=Status.PASS, blocking=True, reason="",
                                            metrics=dict(written))) == finding, check_id
        assert type(finding).from_metrics(stored(written)) == finding, check_id
        assert stored(written) == written, check_id


def assert_keys_in_order(findings: Mapping[str, Finding], keys: Mapping[str, str]) -> None:
    """Each finding (by its check id) writes exactly the metric keys `keys` names, space-separated,
    in that order: the keys the gate always wrote, so summary.json and its readers are unchanged."""
    for check_id, names in keys.items():
        assert list(findings[check_id].metrics()) == names.split(), check_id
