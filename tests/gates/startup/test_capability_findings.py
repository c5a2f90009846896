"""One root cause, one finding: a feature the candidate lost against the reference is one blocking
`startup.capabilities` FAIL, the later checks that need it point there instead of failing one by
one; and `startup.execution_path` sets the path a target is judged by beside what it states."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")

from fault_proxy import fault_proxy  # noqa: E402
from run_util import gk_run  # noqa: E402
from server_util import running_server  # noqa: E402

from gatekeeper.capabilities import UNDETERMINED  # noqa: E402
from gatekeeper.endpoints.probe import tool_parsing  # noqa: E402
from gatekeeper.endpoints.responses import ChatResponse, ToolCall  # noqa: E402
from paths import GK_TINY


@pytest.fixture(scope="module")
def gk_tiny_server():
    """The shipped model (it writes real tool calls) on the optimized path."""
    with running_server(GK_TINY, "--profile", "optimized") as server:
        yield server


def _policy(tmp_path: Path, cases: str, streams: bool) -> str:
    policy = tmp_path / "policy.yaml"
    policy.write_text(f"version: 1\ngates:\n  golden:\n    cases: [{cases}]\n    stream_variants: {str(streams).lower()}\n")
    return str(policy)


def _unparse(path: str, body: dict) -> dict:
    """A server without a tool parser: each parsed call goes back into the text, Hermes-framed."""
    for choice in body.get("choices", []):
        msg = choice.get("message") or {}
        calls = msg.pop("tool_calls", None) or []
        if calls:
            msg["content"] = "".join('<tool_call>{"name": %s, "arguments": %s}</tool_call>' % (
                json.dumps(c["function"]["name"]), c["function"]["arguments"]) for c in calls)
            choice["finish_reason"] = "stop"
    return body


@pytest.mark.slow  # ~17 s: out of the default suite's 15 minutes (CI runs it)
def test_a_lost_capability_is_one_blocking_finding_and_the_later_gates_point_to_it(tmp_path, tiny_model_dir):
    out = gk_run(tmp_path, "--model", str(tiny_model_dir), "--candidate-opt", "disable_logprobs=true",
                 "--gates", "startup,numerics")
    check = out.check("startup.capabilities")
    assert check["status"] == "FAIL" and check["blocking"] and "logprobs" in check["metrics"]["lost"], check
    assert out.summary["verdict"] == "ROLLBACK" and out.code == 1, out.summary["reasons"]
    scoring = out.check("numerics.scoring")  # gate 2 still ran: the lost feature did not stop the run
    assert scoring["status"] == "SKIP" and "see startup.capabilities" in scoring["reason"], scoring
    clean = gk_run(tmp_path / "clean", "--model", str(tiny_model_dir), "--gates", "startup")
    assert clean.check("startup.capabilities")["status"] == "PASS"


def test_a_server_that_stops_parsing_tool_calls_is_one_finding_not_one_per_case(tmp_path, gk_tiny_server):
    args = ("--policy", _policy(tmp_path, "canary-ok, tool-weather, tool-alarm, tool-currency", False),
            "--gates", "startup,golden")
    with fault_proxy(gk_tiny_server.url, "pass", rewrite=_unparse) as url:
        out = gk_run(tmp_path / "lost", "--reference", gk_tiny_server.url, "--candidate", url, *args)
    lost = out.check("startup.capabilities")
    assert lost["status"] == "FAIL" and lost["metrics"]["lost"] == ["tool_parsing"], lost
    cand = next(t for t in out.summary["targets"] if t["role"] == "candidate")
    assert "returned it as content" in cand["capabilities"]["notes"]["tool_parsing"], cand["capabilities"]
    for case in ("tool-weather", "tool-alarm", "tool-currency"):
        check = out.check(f"golden.{case}")
        assert check["status"] == "SKIP" and "see startup.capabilities" in check["reason"], check
        assert check["metrics"]["lost"] == "tool_parsing", check  # the correctness table's Structured row reads it
    assert "Structured</td>" in (html := (out.run_dir / "correctness.html").read_text())
    structured = html[html.index("Structured</td>"):].split("</tr>")[0]
    assert "3 not asked: the candidate lost tool_parsing" in structured and "badge-FAIL" in structured, structured
    failed = [c["id"] for g in out.summary["gates"] for c in g["checks"] if c["status"] == "FAIL"]
    assert set(failed) <= {"startup.capabilities", "golden.coverage"}, failed  # coverage: 1 of 4 cases judged
    assert out.summary["verdict"] == "ROLLBACK"


def test_a_capability_neither_target_has_is_named_once_and_the_gates_judge_the_rest(tmp_path, gk_tiny_server):
    """Two servers without a tool-call parser (llama-cpp-python's, say): not the candidate's regression.
    `startup.capabilities` names the gap once; the checks that need it are advisory SKIPs pointing
    there, outside coverage; the other cases are judged and the run can PROMOTE."""
    args = ("--policy", _policy(tmp_path, "canary-ok, echo-words, arith-mul, tool-weather, tool-alarm", False),
            "--gates", "startup,golden")
    with fault_proxy(gk_tiny_server.url, "pass", rewrite=_unparse) as ref, \
            fault_proxy(gk_tiny_server.url, "pass", rewrite=_unparse) as cand:
        out = gk_run(tmp_path / "neither", "--reference", ref, "--candidate", cand, *args)
    caps = out.check("startup.capabilities")
    assert caps["status"] == "PASS" and caps["metrics"]["neither"] == ["tool_parsing"], caps
    assert caps["reason"].count("tool_parsing") == 1 and "returned it as content" in caps["reason"], caps["reason"]
    for case in ("tool-weather", "tool-alarm"):
        check = out.check(f"golden.{case}")
        assert check["status"] == "SKIP" and not check["blocking"], check
        assert check["reason"] == "needs tool_parsing, which neither target has: see startup.capabilities"
    coverage = next(g for g in out.summary["gates"] if g["id"] == "golden")["coverage"]
    assert coverage["not_asked"] == {"neither target has tool_parsing": 2} and coverage["total"] == 3, coverage
    assert out.summary["verdict"] == "PROMOTE", out.summary["reasons"]


def test_streams_without_finish_reasons_are_one_finding_and_the_stream_checks_judge_the_rest(tmp_path, gk_tiny_server):
    args = ("--policy", _policy(tmp_path, "canary-ok, json-schema-1, tool-weather", True), "--gates", "startup,golden")
    with fault_proxy(gk_tiny_server.url, "no_stream_finish") as url:
        out = gk_run(tmp_path, "--reference", gk_tiny_server.url, "--candidate", url, *args)
    lost = out.check("startup.capabilities")
    assert lost["status"] == "FAIL" and lost["metrics"]["lost"] == ["stream_finish_reason"], lost
    for case in ("json-schema-1", "tool-weather"):
        check = out.check(f"golden.{case}.stream")
        assert check["status"] == "PASS" and "finish reasons not compared" in check["reason"], check
        assert check["metrics"]["streamed_finish_reason"] is None


def test_the_tool_parsing_probe_tells_a_missing_parser_from_a_model_that_did_not_call():
    call = ChatResponse(text="", finish_reason="tool_calls",
                        tool_calls=(ToolCall("get_weather", '{"city": "Oslo"}'),))
    assert tool_parsing(call) == (True, "")
    unparsed, why = tool_parsing(ChatResponse(text='<tool_call>{"name": "get_weather", "arguments": {}}</tool_call>',
                                              finish_reason="stop"))
    assert not unparsed and not why.startswith(UNDETERMINED) and "get_weather" in why
    for text in ("It is sunny in Oslo.", '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"]}',
                 '{"city": "Oslo"}'):
        ok, why = tool_parsing(ChatResponse(text=text, finish_reason="stop"))
        assert not ok and why.startswith(UNDETERMINED), (text, why)


@pytest.mark.slow  # ~15 s: out of the default suite's 15 minutes (CI runs it)
def test_the_observed_path_is_read_from_the_log_and_metrics_and_a_wrong_declaration_holds(tmp_path, gk_tiny_server):
    def config(declare: str) -> str:
        path = tmp_path / f"run-{declare or 'plain'}.yaml"
        extra = f", declare: {{{declare}}}" if declare else ""
        path.write_text(f"candidate: {{kind: url, url: {gk_tiny_server.url!r}, "
                        f"log_file: {str(gk_tiny_server.log_path)!r}{extra}}}\n")
        return str(path)

    plain = gk_run(tmp_path / "plain", "-c", config(""), "--gates", "startup")
    check = plain.check("startup.execution_path")
    assert check["status"] == "PASS", check
    cand = next(t for t in plain.summary["targets"] if t["role"] == "candidate")
    assert cand["observed"] == {"dtype": "float32", "kv_cache_dtype": "float32", "tp": "1", "block_size": "16",
                                "prefix_caching": "true", "fused_norm": "false", "attention_backend": "sdpa"}, cand["observed"]
    wrong = gk_run(tmp_path / "wrong", "-c", config("dtype: bf16"), "--gates", "startup")
    check = wrong.check("startup.execution_path")
    assert check["status"] == "FAIL" and not check["blocking"], check
    assert "judged as dtype=bfloat16 but says dtype=float32" in check["reason"], check
    assert wrong.summary["verdict"] == "HOLD" and wrong.code == 2, wrong.summary["reasons"]


def test_a_bundled_candidate_states_the_path_its_options_chose(tmp_path, tiny_model_dir):
    out = gk_run(tmp_path, "--model", str(tiny_model_dir), "--candidate-opt", "dtype=bf16", "--candidate-opt", "tp=2",
                 "--gates", "startup")
    assert out.check("startup.execution_path")["status"] == "PASS", out.check("startup.execution_path")
    cand = next(t for t in out.summary["targets"] if t["role"] == "candidate")
    assert cand["observed"]["dtype"] == "bfloat16" and cand["observed"]["tp"] == "2", cand["observed"]
