"""The one reader of summary.json (gatekeeper/run_summary.py): a schema-valid summary read into
typed values, a summary of the older shape the reader still accepts (within gatekeeper.summary/1
fields are only added), and each way a run directory's summary can fail, as its own named error:
none of them is read as a verdict."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from gatekeeper.errors import ConfigError
from gatekeeper.results import Judgement, Status, Verdict
from gatekeeper.run_summary import (
    SummaryError,
    SummaryInvalid,
    SummaryMissing,
    SummaryOtherFormat,
    SummaryUnreadable,
    read_summary,
)
from summary_files import check, run_of, target, write_summary


def _rollback(run_dir: Path) -> Path:
    checks = [check("startup.canary.candidate", "PASS"),
              check("golden.json-enforced-1", "FAIL", "regression", family="json_enforced", kl=float("nan")),
              check("golden.eos-stop", "WARN", "slow stop", blocking=False)]
    targets = (target("reference"), target("candidate", version=None, declared={"dtype": "bfloat16"}, observed={"tp": "2"}))
    return write_summary(run_dir, run_of("ROLLBACK", checks, targets, run_id="run-7", seed=7))


def _edit(path: Path, change) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    change(doc)
    path.write_text(json.dumps(doc), encoding="utf-8")


def test_a_schema_valid_summary_reads_into_typed_values(tmp_path: Path) -> None:
    _rollback(tmp_path)
    run = read_summary(tmp_path)
    assert run.path == tmp_path and run.run_id == "run-7" and run.seed == 7 and run.policy == "gates/default.yaml"
    assert run.verdict is Verdict.ROLLBACK and run.headline == "ROLLBACK" and run.reasons == ("ROLLBACK: as built",)
    assert run.started_at == "2026-12-01T10:00:00+00:00" and run.gatekeeper_version
    assert [(g.id, g.status) for g in run.gates] == [("startup", Status.PASS), ("golden", Status.FAIL)]
    assert [c.id for c in run.checks] == ["startup.canary.candidate", "golden.json-enforced-1", "golden.eos-stop"]
    failed = run.check("golden.json-enforced-1")
    assert failed is not None and failed.status is Status.FAIL and failed.blocking and failed.gate == "golden"
    assert failed.family == "json_enforced" and failed.judgement is Judgement.EXACT
    assert math.isnan(failed.metrics["kl"])  # written "NaN" (strict JSON), read back as a float
    assert run.check("golden.eos-stop").blocking is False and run.check("nope.x") is None
    candidate = run.target("candidate")
    assert candidate is not None and candidate.declared == {"dtype": "bfloat16"} and candidate.observed == {"tp": "2"}
    assert candidate.version is None and candidate.engine  # the run's identity names the engine
    assert run.candidate == f"{candidate.engine}: bundled candidate"
    assert run.reference == f"{run.target('reference').engine}: bundled reference (version 0.1.0)"


def test_a_summary_of_the_older_shape_reads_with_the_documented_defaults(tmp_path: Path) -> None:
    """A gatekeeper.summary/1 file from before headline, gatekeeper_version, identity, gates_not_run,
    a target's observed path and a check's finished_at / undecided / near_miss were added."""
    path = _rollback(tmp_path)

    def older(doc: dict) -> None:
        for key in ("headline", "gatekeeper_version", "identity", "gates_not_run", "partial", "restricted"):
            doc.pop(key, None)
        for t in doc["targets"]:
            t.pop("observed", None)
        for g in doc["gates"]:
            for c in g["checks"]:
                for key in ("finished_at", "undecided", "near_miss", "detection_limit"):
                    c.pop(key, None)

    _edit(path, older)
    run = read_summary(tmp_path)
    assert run.verdict is Verdict.ROLLBACK and run.headline == "ROLLBACK" and run.gatekeeper_version is None
    assert run.left_out == () and run.target("candidate").observed == {} and run.target("candidate").engine is None
    assert all(c.finished_at == "" and not c.undecided and not c.near_miss for c in run.checks)


def test_an_older_partial_summary_rebuilds_its_headline(tmp_path: Path) -> None:
    path = _rollback(tmp_path)

    def older(doc: dict) -> None:
        doc.pop("headline")
        doc["verdict"] = "PROMOTE"
        doc["gates_not_run"] = [{"id": "golden", "why": "not selected (--gates startup)"}]

    _edit(path, older)
    run = read_summary(tmp_path)
    assert run.headline == "PROMOTE (partial: 1 of 2 gates ran)"
    assert run.left_out == ("gate golden (not selected (--gates startup))",)


def _no_verdict(path: Path) -> None:
    _edit(path, lambda doc: doc.pop("verdict"))


def _unknown_verdict(path: Path) -> None:
    _edit(path, lambda doc: doc.update(verdict="MAYBE"))


def _corrupt(path: Path) -> None:
    path.write_text('{"format": "gatekeeper.summary/1", "verdict": "PROM', encoding="utf-8")


def _not_utf8(path: Path) -> None:
    path.write_bytes(b'{"verdict": "\xff"}')


def _a_list(path: Path) -> None:
    path.write_text("[]", encoding="utf-8")


def _later_format(path: Path) -> None:
    _edit(path, lambda doc: doc.update(format="gatekeeper.summary/2"))


def _gone(path: Path) -> None:
    path.unlink()


@pytest.mark.parametrize("spoil, error, says", [
    (_gone, SummaryMissing, "summary.json: no such file (the run died or was cut short before its end)"),
    (_corrupt, SummaryUnreadable, "summary.json: not JSON (Unterminated string"),
    (_not_utf8, SummaryUnreadable, "summary.json: cannot be read ("),
    (_no_verdict, SummaryInvalid, "summary.json: not a gatekeeper summary (at top level: 'verdict' is a required property)"),
    (_unknown_verdict, SummaryInvalid, "summary.json: not a gatekeeper summary (at verdict: 'MAYBE' is not one of"),
    (_a_list, SummaryInvalid, "summary.json: not a gatekeeper summary (a JSON object is expected)"),
    (_later_format, SummaryOtherFormat, "summary.json: format 'gatekeeper.summary/2', not 'gatekeeper.summary/1'"),
], ids=["missing", "corrupt-json", "not-utf8", "no-verdict", "unknown-verdict", "not-an-object", "later-format"])
def test_each_unreadable_summary_is_its_own_named_error_and_never_a_verdict(tmp_path: Path, spoil, error, says) -> None:
    path = _rollback(tmp_path)
    spoil(path)
    with pytest.raises(error) as raised:
        read_summary(tmp_path)
    assert isinstance(raised.value, SummaryError) and isinstance(raised.value, ConfigError)
    assert raised.value.summary == path and says in str(raised.value), str(raised.value)
    assert str(raised.value).startswith(str(path))
