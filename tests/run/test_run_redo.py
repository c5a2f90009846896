"""`gatekeeper run --resume RUN_DIR --redo GATE[,GATE]`: a finished run asks the named gates again on
fresh targets, keeps every other gate's records, and writes one report whose summary.json names the
gates redone; without --resume, with an unknown gate, or on a finished run without --redo: exit 3,
one line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gatekeeper.report.records import GATE_FORMAT, read_records
from fault_proxy import fault_proxy
from paths import GK_TINY, ROOT
from run_util import gk_run
from server_util import running_server

pytest.importorskip("torch")

OPTIONS = ("--gates", "startup,numerics,golden", "--cases", "canary-ok", "--seed", "3")


def _gk(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gatekeeper.cli", "run", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


@pytest.mark.slow  # ~19 s: out of the default suite's 15 minutes (CI runs it)
def test_a_finished_run_asks_one_gate_again_and_keeps_the_rest(tmp_path):
    first = gk_run(tmp_path / "out", *OPTIONS)
    assert first.summary is not None and first.run_dir is not None, first.stderr
    run_dir = first.run_dir
    numerics_before = [r for r in read_records(run_dir / "records.jsonl") if r.get("gate") == "numerics"]
    done = _gk(*OPTIONS, "--resume", str(run_dir), "--redo", "golden")
    assert done.returncode == first.code, done.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["resumed"] == {"reused": ["numerics"], "ran": ["startup", "golden"], "redone": ["golden"]}, summary["resumed"]
    assert "asking again: golden" in done.stderr
    lines = list(read_records(run_dir / "records.jsonl"))
    assert [r for r in lines if r.get("gate") == "numerics"] == numerics_before  # kept as they were
    assert [r["id"] for r in lines if r.get("format") == GATE_FORMAT].count("golden") == 1  # the old golden lines went
    assert not (run_dir / "incomplete.json").exists()


@pytest.mark.parametrize("args, says", [
    (("--redo", "golden"), "--redo needs --resume RUN_DIR"),
    (("--resume", "{run}", "--redo", "nosuch"), "unknown gate(s) nosuch"),
    (("--resume", "{run}"), "the run is complete (summary.json); nothing to resume"),
])
def test_bad_redo_is_exit_3_with_one_line(tmp_path, args, says):
    run_dir = tmp_path / "20260101T000000Z-abcdef"
    run_dir.mkdir()
    (run_dir / "summary.json").write_text("{}")
    done = _gk(*OPTIONS, *(a.replace("{run}", str(run_dir)) for a in args))
    assert done.returncode == 3 and says in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow  # two runs of gates 1, 2 and 4 against a real server behind a real proxy: about two minutes
def test_a_hold_for_one_failed_request_is_redone_into_a_verdict_without_the_other_gates(tmp_path):
    """One reference request of gate 4 fails (an HTTP 500 from the proxy, which the client does not
    retry): the run HOLDs on that gate's ERROR, whose evidence names the request and whose coverage
    says what it lost; `--resume RUN --redo longctx` asks gate 4 again and the run gets its verdict."""
    asks_a_needle = lambda body: b"What is the secret" in body and b'"max_tokens"' in body  # noqa: E731 — a gate-4 chat
    with running_server(GK_TINY) as upstream, fault_proxy(upstream.url, "pass", fail_once=asks_a_needle) as url:
        options = ("--policy", str(ROOT / "gates/smoke.yaml"), "--gates", "startup,numerics,longctx",
                   "--reference", url, "--candidate", upstream.url, "--seed", "5")
        first = gk_run(tmp_path / "out", *options)
        assert first.code == 2 and first.summary["verdict"] == "HOLD", first.summary and first.summary["reasons"]
        errors = [c for c in first.gate("longctx")["checks"] if c["status"] == "ERROR"]
        assert errors and all("HTTP 500" in c["reason"] for c in errors), [c["reason"] for c in errors]
        records = {r["id"]: r for r in read_records(first.run_dir / "records.jsonl") if r.get("id") == errors[0]["id"]}
        evidence = records[errors[0]["id"]]["evidence"][0]  # the failed request leads the evidence
        assert evidence["title"] == "the failed request (reference)", evidence
        facts = dict(evidence["data"]["rows"])
        assert facts["target"] == "reference" and facts["gate"] == "longctx" and facts["request"].startswith("chat")
        coverage = first.check("longctx.coverage")["reason"]
        assert "lost to 1 failed request" in coverage, coverage
        assert any("--redo longctx" in r for r in first.summary["reasons"]), first.summary["reasons"]
        numerics = [r for r in read_records(first.run_dir / "records.jsonl") if r.get("gate") == "numerics"]
        again = _gk(*options, "--resume", str(first.run_dir), "--redo", "longctx")
    summary = json.loads((first.run_dir / "summary.json").read_text())
    assert again.returncode == 0 and summary["verdict"] == "PROMOTE", summary["reasons"]
    assert summary["resumed"]["redone"] == ["longctx"] and "numerics" in summary["resumed"]["reused"], summary["resumed"]
    assert [r for r in read_records(first.run_dir / "records.jsonl") if r.get("gate") == "numerics"] == numerics
