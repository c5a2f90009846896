"""Gate 4's review of a tool or JSON case only the candidate fails (`gates/longctx/tool_review.py`):
a near tie is forced, and only a forced candidate that follows the reference's answer is a
precision flip; a near tie forcing could not resolve stays undecided, a confident one regresses.
`longctx.tool_result` is judged on one case by the same review."""

from __future__ import annotations

from gatekeeper.endpoints.client import Endpoint
from gatekeeper.endpoints.responses import TokenLogprob
from gatekeeper.gates.forcing import Forced
from gatekeeper.gates.interface import GateContext
from gatekeeper.gates.longctx.tool_checks import _result
from gatekeeper.gates.longctx.tool_review import Reviewed, forced_table, review_note
from gatekeeper.results import Status
from gatekeeper.stats.near_tie import judge


def _pos(token: str, top: dict[str, float]) -> TokenLogprob:
    return TokenLogprob(token, top[token], top)


CLOSE = judge(3, _pos("4", {"4": -0.6, "7": -0.9}), _pos("7", {"7": -0.7, "4": -0.8}), 1.0)
FAR = judge(5, _pos("2", {"2": -0.1, "9": -3.5}), _pos("9", {"9": -0.2, "2": -4.0}), 1.0)
FOLLOWS = Forced(positions=12, partings=(CLOSE,))
LEAVES = Forced(positions=12, partings=(CLOSE, FAR))


def test_only_a_forced_near_tie_the_candidate_follows_is_a_precision_flip():
    flip = Reviewed(divergence=CLOSE, forced=FOLLOWS)
    assert flip.flip and not flip.regression and not flip.undecided
    left = Reviewed(divergence=CLOSE, forced=LEAVES)
    assert left.regression and not left.flip and not left.undecided
    unforced = Reviewed(divergence=CLOSE, forced="the reference has no echo, so the reference's answer could not be forced")
    assert unforced.undecided and not unforced.flip and not unforced.regression
    confident = Reviewed(divergence=FAR)
    assert confident.regression and not confident.flip and not confident.undecided
    assert [r.outcome() for r in (flip, left, unforced, confident)] == [
        "precision flip (forgiven)", "regression, confident when forced", "near tie, not forced (undecided)",
        "regression, confident divergence"]


def test_the_note_names_each_outcome_and_flips_beyond_the_limit():
    found = {0: Reviewed(divergence=CLOSE, forced=FOLLOWS), 1: Reviewed(divergence=CLOSE, forced=FOLLOWS),
             2: Reviewed(divergence=CLOSE, forced="no echo"), 3: Reviewed(divergence=CLOSE, forced=LEAVES),
             4: Reviewed(divergence=FAR), 6: Reviewed(divergence=CLOSE, forced="not counted: past the cases")}
    note = review_note(found, 6, max_flips=1)
    assert "undecided: 1 case(s)" in note and "(no echo)" in note
    assert "2 case(s) only the candidate fails follow the reference's answer" in note
    assert "more than the 1 tool_max_precision_flips forgives" in note
    assert "1 case(s) parting at a near tie confidently leave" in note
    assert "1 confirmed as a confident divergence" in note
    assert "more than" not in review_note(found, 6, max_flips=2)
    assert review_note({}, 6, max_flips=1) == ""


def test_the_forcing_table_lists_the_forced_cases_only():
    assert forced_table({"case 1": Reviewed(divergence=FAR)}) is None
    table = forced_table({"case 1": Reviewed(divergence=FAR), "case 2": Reviewed(divergence=CLOSE, forced=FOLLOWS),
                          "case 3": Reviewed(divergence=CLOSE, forced="no echo")})
    assert table is not None
    assert [list(row[:2]) for row in table.rows] == [["case 2", "precision flip (forgiven)"],
                                               ["case 3", "near tie, not forced (undecided)"]]
    assert table.rows[1][2] == "no echo" and "each a near tie" in table.rows[0][2]


def _ctx() -> GateContext:
    ep = Endpoint("reference", "http://127.0.0.1:9", "m")  # never asked
    return GateContext(gate_id="longctx", reference=ep, candidate=ep, settings=None, blocking_rule=lambda check_id: True,
                       capabilities={}, record=lambda r: None)


def test_a_tool_result_only_the_candidate_misses_is_judged_by_how_forcing_went():
    """`longctx.tool_result` with the reference using the tool's result and the candidate not: a
    precision flip PASSes (judged), a forced departure or a confident divergence FAILs, a near
    tie forcing could not resolve is undecided."""
    want = "Sent."
    outcomes = {}
    for name, review in (("flip", Reviewed(divergence=CLOSE, forced=FOLLOWS)),
                         ("left", Reviewed(divergence=CLOSE, forced=LEAVES)),
                         ("unforced", Reviewed(divergence=CLOSE, forced="the reference has no echo")),
                         ("confident", Reviewed(divergence=FAR))):
        ctx = _ctx()
        _result(ctx, 6, want, want, "Not sent.", None, review)
        check = ctx.checks[-1]
        outcomes[name] = (check.status, check.metrics["precision_flip"], check.reason)
    assert outcomes["flip"][:2] == (Status.PASS, True) and "a precision flip" in outcomes["flip"][2]
    assert outcomes["left"][:2] == (Status.FAIL, False) and "confidently leaves it" in outcomes["left"][2]
    assert outcomes["unforced"][0] is Status.WARN and "could not be forced (the reference has no echo)" in outcomes["unforced"][2]
    assert outcomes["confident"][0] is Status.FAIL and "confident" in outcomes["confident"][2]
