"""`longctx.batch_features`'s judgement on the outcomes a real vLLM 0.31.0 → 0.32.0 run gave (the
documented upgrade): both builds' engines die in full batches of seeded requests ("CPU Generator
does not use offset"), the candidate's on `seeded sampling`, the reference's one feature later on
`n=2 seeded`. Which feature a build meets its death on is the luck of the batch: a defect both
share, not judged, never the candidate's FAIL; a death only the candidate's engine dies stays its
FAIL."""

from __future__ import annotations

from gatekeeper.endpoints.client import Endpoint
from gatekeeper.endpoints.responses import ChatResponse
from gatekeeper.errors import EndpointError
from gatekeeper.gates.interface import GateContext
from gatekeeper.gates.longctx.batch_features import FEATURES, Outcome, _judge
from gatekeeper.results import Status

CAUSE = "RuntimeError: CPU Generator does not use offset"


def _ok(text: str) -> ChatResponse:
    return ChatResponse(text=text, tool_calls=(), finish_reason="stop", prompt_tokens=10, completion_tokens=3, logprobs=None, e2e_s=0.1,
                        ttft_s=0.05, streamed=True, protocol_warnings=(), raw={}, model="m")


def _died() -> EndpointError:
    return EndpointError("http", "http://127.0.0.1:9/v1/chat/completions", "EngineCore encountered an issue.", 500)


def _outcomes(dies_on: str) -> list[Outcome]:
    """Every feature answered the same alone and batched until `dies_on`, which fails in the batch;
    every later one fails on a dead engine."""
    out, dead = [], False
    for f in FEATURES:
        if f.name == dies_on or dead:
            dead = True
            out.append(Outcome((_died(), _died()), (_died(), _died()) if f.name != dies_on else (_ok("7"), _ok("7")), dead=True))
        else:
            out.append(Outcome((_ok(f.name), _ok(f.name)), (_ok(f.name), _ok(f.name))))
    return out


def _ctx() -> GateContext:
    ep = Endpoint("reference", "http://127.0.0.1:9", "m")  # never asked
    return GateContext(gate_id="longctx", reference=ep, candidate=ep, settings=None, blocking_rule=lambda check_id: True, capabilities={},
                       record=lambda r: None)


def test_both_builds_dying_of_one_cause_on_different_features_is_a_shared_defect_not_a_fail() -> None:
    ref, cand = _outcomes("n=2 seeded"), _outcomes("seeded sampling")
    ctx = _ctx()
    _judge(ctx, ref, cand, "2 copies in a full batch", 2048, 1843, 2, 0.0, True, shared_death=CAUSE)
    check = ctx.checks[-1]
    assert check.status is Status.WARN and CAUSE in check.reason and "a defect both share" in check.reason, check.reason
    assert check.metrics["broken"] == [] and dict(ctx.tally.unjudged)["both engines died of it"] == 1


def test_a_death_only_the_candidates_engine_dies_stays_its_fail() -> None:
    ref, cand = _outcomes("none"), _outcomes("seeded sampling")
    ctx = _ctx()
    _judge(ctx, ref, cand, "2 copies in a full batch", 2048, 1843, 2, 0.0, True, shared_death=None)
    check = ctx.checks[-1]
    assert check.status is Status.FAIL and check.reason.startswith("seeded sampling: the candidate answered it alone"), check
