"""Gate 3 end to end: real `gatekeeper serve` processes as reference and candidate, faults
injected through the engine's switches, no mocked endpoints.

Two kinds of model:
- a scripted checkpoint (tests/helpers/scripted_checkpoint.py) that always answers with two Hermes tool
  calls whose tags are split across tokens: it proves the stream-variant check catches
  `tool-parser-partial` without depending on training;
- the trained gk-tiny. DEPENDENCY: these tests use `gatekeeper/models/gk-tiny` when it exists,
  otherwise a copy of the trainer's intermediate checkpoint in `runs/gk-tiny` (copied to a temp
  dir, never written), otherwise they skip. An under-trained model fails cases on both sides:
  the clean test then only requires that nothing the reference passes fails, and the core
  tool-call stream test skips while the model makes no tool calls.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from gatekeeper.endpoints.client import Endpoint
from gatekeeper.gates.golden.gate import GoldenGate
from gatekeeper.capabilities import FEATURES, Capabilities
from gatekeeper.gates.golden.settings import GoldenSettings
from gatekeeper.gates.interface import GateContext, RunInfo
from gatekeeper.golden import GoldenSet, load_golden_set, parse_golden_set, record_baseline
from gatekeeper.results import CheckResult, Status
from gatekeeper.targets.runtime import TargetRuntime
from scripted_checkpoint import TOOL_SCRIPT, build_scripted_checkpoint
from server_util import ServerProcess, running_server
from paths import ROOT

SHIPPED = ROOT / "gatekeeper" / "models" / "gk-tiny"
INTERMEDIATE = ROOT / "runs" / "gk-tiny"
CKPT_FILES = ("config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")

TOOL_SET = """\
version: test
cases:
  - id: two-calls
    family: tool_call
    stream_variant: true
    messages: [{role: user, content: "Weather in Paris, and an alarm at 07:30 on mondays."}]
    tools:
      - type: function
        function:
          name: get_weather
          parameters: {type: object, properties: {city: {type: string}, unit: {type: string, enum: [celsius, fahrenheit]}},
                       required: [city, unit]}
      - type: function
        function:
          name: set_alarm
          parameters: {type: object, properties: {time: {type: string}, days: {type: array, items: {type: string}}},
                       required: [time, days]}
    max_tokens: 32
    assert:
      - type: tool_call
        calls:
          - {name: set_alarm, arguments: {time: "07:30", days: [monday]}}
          - {name: get_weather, arguments: {city: Paris, unit: celsius}}
      - {type: finish_reason, value: tool_calls}
      - {type: no_degeneration}
      - {type: equals_reference}
"""


def endpoint(role: str, server: ServerProcess) -> Endpoint:
    model = httpx.get(server.url + "/v1/models").json()["data"][0]["id"]
    return Endpoint(role, server.url, model)


EVERYTHING = Capabilities(**{name: True for name in FEATURES}, top_logprobs_max=20)
BOTH_CAPABLE = {"reference": EVERYTHING, "candidate": EVERYTHING}


def run_gate(reference: ServerProcess, candidate: ServerProcess, golden: list[GoldenSet],
             settings: dict | None = None, capabilities: dict | None = None, dtype: str = "float32") -> dict[str, CheckResult]:
    """Run the golden gate with a minimal GateContext (no runner) and return checks by id;
    `capabilities` names what a role lacks, e.g. {"candidate": {"tools": False}}; `dtype` is the
    candidate's declared dtype."""
    caps = {role: replace(EVERYTHING, **(capabilities or {}).get(role, {})) for role in BOTH_CAPABLE}
    runtimes = {"candidate": TargetRuntime(role="candidate", kind="bundled", description="the candidate", dtype=dtype)}
    ctx = GateContext(gate_id="golden", reference=endpoint("reference", reference), candidate=endpoint("candidate", candidate),
                      settings=GoldenSettings(**(settings or {})), blocking_rule=lambda check_id: True, capabilities=caps,
                      record=lambda result: None, run=RunInfo(golden=tuple(golden), runtimes=runtimes))
    try:
        GoldenGate().run(ctx)
    finally:
        ctx.reference.close()
        ctx.candidate.close()
    return {c.id: c for c in ctx.checks}


@pytest.fixture(scope="module")
def scripted_model(tmp_path_factory) -> Path:
    return build_scripted_checkpoint(tmp_path_factory.mktemp("scripted-tools"), TOOL_SCRIPT)


@pytest.fixture(scope="module")
def gk_tiny(tmp_path_factory) -> Path:
    if (SHIPPED / "model.safetensors").exists():
        return SHIPPED
    if (INTERMEDIATE / "model.safetensors").exists():
        copy = tmp_path_factory.mktemp("gk-tiny-intermediate")
        for name in CKPT_FILES:
            if (INTERMEDIATE / name).exists():
                shutil.copy2(INTERMEDIATE / name, copy / name)
        return copy
    pytest.skip("needs the trained model gatekeeper/models/gk-tiny (or the trainer's checkpoint in runs/gk-tiny)")


@pytest.mark.slow  # suite time (a clean-clone run took 16 min 42 s); selftest --quick catches tool-parser-partial at golden
def test_stream_variant_catches_tool_parser_partial(scripted_model):
    golden = [parse_golden_set(TOOL_SET, "tools.yaml")]
    with running_server(scripted_model, "--profile", "reference") as ref, \
            running_server(scripted_model, "--profile", "optimized") as clean, \
            running_server(scripted_model, "--profile", "optimized", "--fault", "tool-parser-partial") as broken:
        good = run_gate(ref, clean, golden)
        bad = run_gate(ref, broken, golden)
    assert good["golden.two-calls"].status is Status.PASS, good["golden.two-calls"].reason
    assert good["golden.two-calls.stream"].status is Status.PASS, good["golden.two-calls.stream"].reason
    assert good["golden.pass_rate"].metrics["pass_rate"] == 1.0
    # The non-streamed answer is still right; only the stream is broken.
    assert bad["golden.two-calls"].status is Status.PASS
    stream = bad["golden.two-calls.stream"]
    assert stream.status is Status.FAIL and stream.family == "tool_call", stream.reason
    pair = stream.evidence[0].data
    assert stream.evidence[0].kind == "text_pair" and pair["divergence"] is not None and pair["reference"] != pair["candidate"]


def test_missing_capabilities_skip_with_the_reason(scripted_model):
    golden = [parse_golden_set(TOOL_SET, "tools.yaml")]
    with running_server(scripted_model, "--profile", "reference") as ref:
        no_tools = run_gate(ref, ref, golden, capabilities={"candidate": {"tools": False}})
        no_stream = run_gate(ref, ref, golden, capabilities={"candidate": {"streaming": False}})
    assert no_tools["golden.two-calls"].status is Status.SKIP
    assert "candidate lacks tools" in no_tools["golden.two-calls"].reason
    assert no_stream["golden.two-calls"].status is Status.PASS
    assert no_stream["golden.two-calls.stream"].status is Status.SKIP and "lacks streaming" in no_stream["golden.two-calls.stream"].reason


def test_a_request_both_targets_refuse_alike_is_not_judged_and_not_an_error(scripted_model):
    """A 400 for a request both servers reject (here a tool_choice naming a function not in the
    tools; a parameter neither release serves is the same) is a feature neither serves: an
    advisory SKIP, its item not asked (outside coverage), never an ERROR."""
    refused = TOOL_SET + """\
  - id: call-a-missing-tool
    family: tool_call
    messages: [{role: user, content: "Ping."}]
    tools: [{type: function, function: {name: ping, parameters: {type: object, properties: {}}}}]
    tool_choice: {type: function, function: {name: pong}}
    max_tokens: 8
    assert:
      - {type: equals_reference}
"""
    golden = [parse_golden_set(refused, "refused.yaml")]
    with running_server(scripted_model, "--profile", "reference") as ref:
        checks = run_gate(ref, ref, golden)
    refused_check = checks["golden.call-a-missing-tool"]
    assert refused_check.status is Status.SKIP and not refused_check.blocking and refused_check.metrics["status_code"] == 400
    assert refused_check.metrics["refused_by_both"] == 1
    assert "both targets refuse" in refused_check.reason and "pong" in refused_check.reason
    assert checks["golden.two-calls"].status is Status.PASS
    assert not [c.id for c in checks.values() if c.status is Status.ERROR]


def test_endpoint_failure_is_an_error_check(scripted_model):
    golden = [parse_golden_set(TOOL_SET, "tools.yaml")]
    with running_server(scripted_model, "--profile", "reference") as ref:
        dead = ServerProcess("http://127.0.0.1:9", 9, ref.proc, ref.log_path)  # nothing listens on port 9
        ctx = GateContext(gate_id="golden", reference=endpoint("reference", ref), candidate=Endpoint("candidate", dead.url, "m"),
                          settings=GoldenSettings(), blocking_rule=lambda c: True, capabilities=BOTH_CAPABLE, record=lambda r: None,
                          run=RunInfo(golden=tuple(golden)))
        GoldenGate().run(ctx)
    checks = {c.id: c for c in ctx.checks}
    assert checks["golden.two-calls"].status is Status.ERROR and checks["golden.two-calls"].metrics["error_kind"] == "connect"
    assert checks["golden.pass_rate"].status is Status.ERROR


def test_baseline_stands_in_for_the_reference(scripted_model, tmp_path):
    golden = parse_golden_set(TOOL_SET, "tools.yaml")
    with running_server(scripted_model, "--profile", "reference") as ref:
        ep = endpoint("reference", ref)
        path = record_baseline(ep, golden, tmp_path / "baselines" / "scripted.jsonl", concurrency=2)
        ep.close()
        with running_server(scripted_model, "--profile", "optimized", "--fault", "tool-parser-partial") as broken:
            checks = run_gate(ref, broken, [golden], settings={"baseline": str(path)})
    assert path.read_text().count("\n") == 2
    assert checks["golden.two-calls"].status is Status.PASS
    assert checks["golden.two-calls.stream"].status is Status.FAIL


def test_eos_ignored_fails_the_eos_cases(gk_tiny):
    core = load_golden_set(ROOT / "golden_sets" / "core.yaml")
    eos = GoldenSet(core.name, core.version, core.path, tuple(c for c in core.cases if c.family == "eos" or c.id == "canary-ok"))
    with running_server(gk_tiny, "--profile", "reference") as ref, \
            running_server(gk_tiny, "--profile", "optimized", "--fault", "eos-ignored") as cand:
        checks = run_gate(ref, cand, [eos])
    for case in eos.cases:
        check = checks[f"golden.{case.id}"]
        assert check.status is Status.FAIL, (case.id, check.reason)
        assert check.metrics["candidate_finish_reason"] == "length"
    assert "regression, the reference passes finish_reason" in checks["golden.canary-ok"].reason


def test_tasks_lost_at_a_near_tie_are_forced_and_flips_beyond_the_limit_are_undecided(gk_tiny):
    """A declared bf16 candidate whose sampler favours every runner-up by a nat (close-call-shift)
    answers some arithmetic wrong where the reference is right, parting at a near tie within bf16's
    gap. Such a lost task is never forgiven on the near tie alone: the reference's answer is forced
    on both (gates/forcing.py). The fault lives in the decode path, which forcing (a prefill) does
    not run, so the candidate follows: precision flips, counted as passed up to
    `max_precision_flips`, beyond it the pass rate undecided (HOLD), never PASS or a false FAIL."""
    core = load_golden_set(ROOT / "golden_sets" / "core.yaml")
    picked = ("arith-add", "arith-mul", "benign-control", "degen-chat-6-rounds", "canary-ok")
    some = GoldenSet(core.name, core.version, core.path, tuple(c for c in core.cases if c.id in picked))
    with running_server(gk_tiny, "--profile", "reference") as ref, \
            running_server(gk_tiny, "--profile", "optimized", "--dtype", "bf16", "--fault", "close-call-shift=1") as cand:
        checks = run_gate(ref, cand, [some], dtype="bfloat16", settings={"stream_variants": False})
        lost = [c for c in checks.values() if c.metrics.get("forced")]
        assert len(lost) >= 2, {k: c.reason for k, c in checks.items()}
        for c in lost:
            assert c.metrics["forced"] == "precision flip" and c.status is Status.PASS, c.reason
            assert "a precision flip, not a regression" in c.reason and "all assertions pass" not in c.reason, c.reason
            assert not c.metrics["candidate_passes"] and c.metrics["reference_passes"], c.metrics
        rate = checks["golden.pass_rate"]
        assert rate.status is Status.WARN and rate.undecided and rate.metrics["precision_flips"] == len(lost), rate.reason
        assert f"lost {len(lost)} case(s)" in rate.reason and "max_precision_flips=1" in rate.reason, rate.reason
        step = GoldenGate.next_step(rate, GoldenSettings())
        assert step is not None and "max_precision_flips" in step
        enough = run_gate(ref, cand, [some], dtype="bfloat16", settings={"stream_variants": False, "max_precision_flips": len(lost)})
    rate = enough["golden.pass_rate"]
    assert rate.status is Status.PASS and not rate.undecided, rate.reason
    assert f"{len(lost)} case(s) lost to a precision flip counted as passed" in rate.reason, rate.reason


@pytest.mark.slow  # ~15 s; test_stream_variant_catches_tool_parser_partial and selftest --quick cover it
def test_tool_parser_partial_fails_the_core_stream_case(gk_tiny):
    core = load_golden_set(ROOT / "golden_sets" / "core.yaml")
    tools = GoldenSet(core.name, core.version, core.path, tuple(c for c in core.cases if c.family == "tool_call"))
    with running_server(gk_tiny, "--profile", "reference") as ref, \
            running_server(gk_tiny, "--profile", "optimized", "--fault", "tool-parser-partial") as cand:
        checks = run_gate(ref, cand, [tools])
    streams = {k: c for k, c in checks.items() if k.endswith(".stream")}
    if not any(c.metrics.get("plain_calls") for c in streams.values()):
        pytest.skip("this gk-tiny checkpoint makes no tool calls yet (needs a better-trained model)")
    assert any(c.status is Status.FAIL for c in streams.values()), {k: c.reason for k, c in streams.items()}
    for c in tools.cases:  # the non-streamed answers are the clean engine's: no regression there
        assert "regression" not in checks[f"golden.{c.id}"].reason


def test_a_gone_endpoint_trips_the_breaker_instead_of_a_request_per_case():
    from gatekeeper.errors import EndpointError
    from gatekeeper.golden.request import Asker

    case = parse_golden_set(TOOL_SET, "tools.yaml").cases[0]
    ask = Asker(Endpoint("candidate", "http://127.0.0.1:9", "m"), max_unreachable=2)  # nothing listens on port 9
    reasons = []
    for _ in range(4):
        with pytest.raises(EndpointError) as e:
            ask(case)
        reasons.append(e.value.detail)
    assert "not sent" not in reasons[0] and "not sent" not in reasons[1]
    assert all("not sent: the candidate stopped answering (2 consecutive failures" in r for r in reasons[2:])


def test_an_empty_case_selection_skips_with_its_reason():
    """No request is made: both endpoints point at a closed port."""
    golden = [parse_golden_set(TOOL_SET, "tools.yaml")]
    ends = [Endpoint(role, "http://127.0.0.1:9", "m") for role in ("reference", "candidate")]
    ctx = GateContext(gate_id="golden", reference=ends[0], candidate=ends[1], settings=GoldenSettings(cases=[]),
                      blocking_rule=lambda check_id: True, capabilities=BOTH_CAPABLE, record=lambda result: None,
                      run=RunInfo(golden=tuple(golden)))
    GoldenGate().run(ctx)
    assert [(c.id, c.status) for c in ctx.checks] == [("golden.cases", Status.SKIP)]
    assert "selects no case" in ctx.checks[0].reason
