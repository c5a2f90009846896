"""How a golden case is judged against the reference and its noise floor (no endpoints needed)."""

from __future__ import annotations

from gatekeeper.golden import parse_golden_set
from gatekeeper.gates.golden.judge import judge_case, judge_stream, passes_absolute
from gatekeeper.endpoints.responses import ChatResponse, ToolCall
from gatekeeper.results import Status

SET = """\
version: 1
cases:
  - id: ok
    family: eos
    messages: [{role: user, content: "Reply with exactly: OK"}]
    assert:
      - {type: equals, value: OK}
      - {type: finish_reason, value: stop}
      - {type: no_degeneration}
  - id: poem
    family: degeneration
    messages: [{role: user, content: "Write a line."}]
    assert:
      - {type: similar_to_reference, threshold: 0.9}
  - id: weather
    family: tool_call
    stream_variant: true
    messages: [{role: user, content: "Weather in Paris?"}]
    assert:
      - {type: tool_call, calls: [{name: get_weather, arguments: {city: Paris}}]}
  - id: data
    family: json
    stream_variant: true
    messages: [{role: user, content: "JSON please"}]
    assert:
      - {type: json_schema, schema: {type: object}}
"""
GS = parse_golden_set(SET)


def r(text: str = "", finish: str = "stop", calls: tuple[ToolCall, ...] = (), warnings: tuple[str, ...] = ()) -> ChatResponse:
    return ChatResponse(text=text, tool_calls=calls, finish_reason=finish, completion_tokens=2, protocol_warnings=warnings)


def test_pass():
    j = judge_case(GS.case("ok"), r("OK"), [r("OK"), r("OK")], 0.8)
    assert j.status is Status.PASS and j.reason == "all assertions pass" and j.case is not None and j.case.failed == ()


def test_regression_when_the_reference_passes():
    j = judge_case(GS.case("ok"), r("OK, and then more", "length"), [r("OK"), r("OK")], 0.8)
    assert j.status is Status.FAIL and "regression, the reference passes finish_reason" in j.reason
    assert j.case is not None and "finish_reason(value='stop')" in j.case.failed


def test_both_fail_is_a_warning_about_the_case():
    j = judge_case(GS.case("ok"), r("Okay"), [r("Okay"), r("Okay")], 0.8)
    assert j.status is Status.WARN and "case does not suit this model (reference fails too)" in j.reason


def test_reference_passing_only_some_runs_is_noise():
    j = judge_case(GS.case("ok"), r("Okay"), [r("OK"), r("Okay")], 0.8)
    assert j.status is Status.WARN and "only 1 of 2 runs" in j.reason


def test_hard_failures_fail_on_their_own():
    j = judge_case(GS.case("ok"), r("!!!!!!!!!!!!!!!!!!!!"), [r("OK")] * 2, 0.8)
    assert j.status is Status.FAIL and "char_run" in j.reason
    j = judge_case(GS.case("ok"), r("!!!!!!!!!!!!!!!!!!!!"), [r("!!!!!!!!!!!!!!!!!!!!")] * 2, 0.8, shared_hard=Status.FAIL)
    assert j.status is Status.FAIL and "char_run" in j.reason and "the reference fails it too" in j.reason
    j = judge_case(GS.case("data"), r('{"a": '), [r('{"a": 1}')], 0.8)
    assert j.status is Status.FAIL and "not JSON" in j.reason


def test_relative_failure_fails_only_beyond_the_noise_floor():
    case = GS.case("poem")
    steady = [r("The river runs to the sea."), r("The river runs to the sea.")]
    assert judge_case(case, r("The river runs to the sea!"), steady, 0.8).status is Status.PASS
    j = judge_case(case, r("Bananas."), steady, 0.8)
    assert j.status is Status.FAIL and "agrees with itself across 2 runs" in j.reason
    noisy = [r("The river runs to the sea."), r("A cat sleeps on the warm mat.")]
    j = judge_case(case, r("Bananas."), noisy, 0.8)
    assert j.status is Status.WARN and "noise floor" in j.reason
    assert judge_case(case, r("A cat sleeps on the warm mat."), noisy, 0.8).status is Status.PASS  # matches a run


def test_protocol_warnings_make_a_pass_a_warning():
    j = judge_case(GS.case("ok"), r("OK", warnings=("stream ended without data: [DONE]",)), [r("OK")], 0.8)
    assert j.status is Status.WARN and "protocol: stream ended" in j.reason


def test_pass_rates_count_absolute_assertions_only():
    assert passes_absolute(GS.case("poem"), r("anything"))
    assert not passes_absolute(GS.case("ok"), r("OK", "length"))


CALL = (ToolCall("get_weather", '{"city": "Paris"}'),)


def test_stream_equal_to_non_stream_passes():
    j = judge_stream(GS.case("weather"), r(calls=(ToolCall("get_weather", '{"city":"Paris"}'),), finish="tool_calls"),
                     r(calls=CALL, finish="tool_calls"))
    assert j.status is Status.PASS
    j = judge_stream(GS.case("data"), r('{"b": 2, "a": 1}'), r('{"a": 1,\n "b": 2}'))
    assert j.status is Status.PASS  # decoded JSON compares, not its formatting


def test_broken_stream_arguments_fail():
    partial = r("<tool_c", calls=(ToolCall("get_weather", '{"city": "Par'),), finish="tool_calls")
    j = judge_stream(GS.case("weather"), partial, r(calls=CALL, finish="tool_calls"))
    assert j.status is Status.FAIL and "not a JSON object" in j.reason


def test_stream_difference_fails_unless_the_reference_shows_the_same():
    case = GS.case("weather")
    other = r(calls=(ToolCall("get_weather", '{"city": "Lyon"}'),), finish="tool_calls")
    plain = r(calls=CALL, finish="tool_calls")
    assert judge_stream(case, other, plain).status is Status.FAIL
    assert judge_stream(case, other, plain, reference_noisy=True).status is Status.WARN
    assert judge_stream(case, other, plain, reference_pair=(other, plain)).status is Status.WARN
    j = judge_stream(case, r(calls=CALL, finish="stop"), plain)
    assert j.status is Status.FAIL and "'stop' vs 'tool_calls'" in j.reason


def test_stream_quirk_shared_with_the_reference_is_a_protocol_warn_and_an_added_one_fails():
    case = GS.case("weather")
    plain = r(calls=CALL, finish="tool_calls")
    no_finish = r(calls=CALL, finish=None)  # a server whose streams carry no finish_reason
    j = judge_stream(case, no_finish, plain, reference_pair=(no_finish, plain))
    assert j.status is Status.WARN and j.reason.startswith("WARN: protocol:") and "None vs 'tool_calls'" in j.reason
    # The reference drops finish_reason; the candidate also changes the call: a difference it adds.
    other = r(calls=(ToolCall("get_weather", '{"city": "Lyon"}'),), finish=None)
    j = judge_stream(case, other, plain, reference_pair=(no_finish, plain))
    assert j.status is Status.FAIL and "not the same way" in j.reason
    assert j.stream is not None and j.stream.stream_difference == ("answer", "finish_reason None vs 'tool_calls'")
    assert j.stream.reference_stream_difference == ("finish_reason None vs 'tool_calls'",)


def test_shared_hard_failures_warn_by_default():
    loop = r("!!!!!!!!!!!!!!!!!!!!")
    j = judge_case(GS.case("ok"), loop, [loop, loop], 0.8)
    assert j.status is Status.WARN and "the reference fails it too" in j.reason
    j = judge_case(GS.case("ok"), loop, [r("OK"), r("OK")], 0.8, shared_hard=Status.WARN)
    assert j.status is Status.FAIL  # the candidate alone degenerates: always FAIL


def _ctx():
    from gatekeeper.endpoints.client import Endpoint
    from gatekeeper.gates.interface import GateContext

    ep = Endpoint("reference", "http://127.0.0.1:9", "m")  # never called
    return GateContext(gate_id="golden", reference=ep, candidate=ep, settings=None, blocking_rule=lambda c: True, capabilities={},
                       record=lambda r: None)


def test_pass_rate_summary_allows_the_reference_noise_only():
    from gatekeeper.gates.golden.pass_rates import PassRates

    rates = PassRates()
    for i in range(10):
        rates.add("eos", candidate_ok=i < 8, reference_ok=i < 9, status=Status.PASS, reference_flip=i == 8)
    ctx = _ctx()
    rates.report(ctx, 0.0, 1)
    check = ctx.checks[-1]
    assert check.id == "golden.pass_rate" and check.status is Status.PASS  # 80% vs 90%, noise 10%
    assert check.metrics["families"]["eos"]["candidate_pass_rate"] == 0.8
    assert check.evidence[0].kind == "table" and check.evidence[0].data["rows"][0][:4] == ["eos", 10, "80.0%", "90.0%"]
    steady = PassRates()
    for i in range(10):
        steady.add("eos", candidate_ok=i < 8, reference_ok=i < 9, status=Status.PASS)
    ctx = _ctx()
    steady.report(ctx, 0.0, 1)
    assert ctx.checks[-1].status is Status.FAIL and "reference noise 0.0%" in ctx.checks[-1].reason


def test_both_fail_is_still_compared_with_what_the_reference_answers():
    """Diffy's rule: where both miss the expected answer, the reference's repeatable answer is
    the baseline."""
    j = judge_case(GS.case("ok"), r("Okay"), [r("Okay"), r("Okay")], 0.8)
    assert j.status is Status.WARN and not j.judged and j.unjudged == "both fail identically"
    j = judge_case(GS.case("ok"), r("Sure"), [r("Okay"), r("Okay")], 0.8)
    assert j.status is Status.FAIL and j.judged and j.divergent
    assert "differs from the one the reference gives in every run (2)" in j.reason
    j = judge_case(GS.case("ok"), r("Sure"), [r("Okay"), r("Fine")], 0.8)
    assert j.status is Status.WARN and j.unjudged == "reference unstable"
    loop, other = r("!!!!!!!!!!!!!!!!!!!!"), r("????????????????????")
    j = judge_case(GS.case("ok"), other, [loop, loop], 0.8)  # a different degeneration than the reference's
    assert j.status is Status.FAIL and not j.divergent  # degenerate output is never forgiven as a near tie


def test_a_forgiven_divergence_keeps_the_other_findings():
    j = judge_case(GS.case("ok"), r("Sure"), [r("Okay"), r("Okay")], 0.8)
    j.forgive("near tie")
    assert j.status is Status.PASS and j.notes[-1] == "near tie" and not j.divergent


def test_near_tie_divergence_is_noise_and_a_confident_one_is_not():
    from gatekeeper.stats.near_tie import first_divergence
    from gatekeeper.endpoints.responses import TokenLogprob

    def answer(*tokens: tuple[str, float, dict[str, float]]) -> ChatResponse:
        return ChatResponse(text="".join(t for t, _, _ in tokens), logprobs=tuple(TokenLogprob(*t) for t in tokens))

    ref = answer(("The", -0.1, {"The": -0.1}), (" cat", -0.70, {" cat": -0.70, " dog": -0.72}))
    close = answer(("The", -0.1, {"The": -0.1}), (" dog", -0.69, {" dog": -0.69, " cat": -0.71}))
    far = answer(("The", -0.1, {"The": -0.1}), (" dog", -0.01, {" dog": -0.01, " cat": -6.0}))
    d = first_divergence(ref, close, max_gap=0.05)
    assert d is not None and d.index == 1 and d.tie and abs(d.reference_gap - 0.02) < 1e-9
    d = first_divergence(ref, far, max_gap=0.05)
    assert d is not None and not d.tie and d.candidate_gap > 5
    assert first_divergence(ref, ref, max_gap=0.05) is None
    assert first_divergence(ref, ChatResponse(text="x"), max_gap=0.05) is None  # no logprobs: nothing to review


def test_a_divergence_whose_logprobs_moved_within_the_dtype_drift_is_a_near_tie():
    """Two divergences a declared bf16 build produced deep in gate 4's long tool prompts (seeds 4
    and 9): one side nearly indifferent, the other not within the 1-nat gap, but every contested
    logprob within gate 2's bf16 tolerance of the other side's. A fault that moves them further,
    or fp32's drift limit, keeps the divergence confident."""
    from gatekeeper.stats.near_tie import DEFAULT_DRIFTS, DEFAULT_GAPS, first_divergence
    from gatekeeper.endpoints.responses import TokenLogprob

    def at(token: str, top: dict[str, float]) -> ChatResponse:
        return ChatResponse(text=token, logprobs=(TokenLogprob(token, top[token], top),))

    gap, drift = DEFAULT_GAPS["bfloat16"], DEFAULT_DRIFTS["bfloat16"]
    seen = [(at('{"', {'{"': -0.243, '"': -1.730, "9": -3.752}), at('"', {'{"': -0.763, '"': -0.763, "9": -3.2})),
            (at('":', {'":': -1.423, '",': -1.718, "_": -1.728}), at('",', {'",': -0.844, " ": -1.531, '":': -2.594}))]
    for ref, cand in seen:
        assert first_divergence(ref, cand, gap).tie is False  # the gap rule alone calls them confident
        d = first_divergence(ref, cand, gap, drift)
        assert d is not None and d.tie and d.drift is not None and d.drift <= drift, d
        assert not first_divergence(ref, cand, DEFAULT_GAPS["float32"], DEFAULT_DRIFTS["float32"]).tie
    faulted = at('",', {'",': -0.05, '":': -4.9})  # the contested logprobs moved by 3.5 nats
    d = first_divergence(seen[1][0], faulted, gap, drift)
    assert d is not None and not d.tie and d.drift > drift
    outside = at('",', {'",': -0.844, " ": -1.531})  # the reference's token not in the candidate's top-k
    assert not first_divergence(seen[1][0], outside, gap, drift).tie
