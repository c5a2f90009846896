"""Failing checks grouped by cause (gatekeeper/signature.py): what the signature masks and keeps, and
the groups the Failures section shows as one card each."""

from __future__ import annotations

from dataclasses import replace

from gatekeeper.signature import group_failures, mask, signature
from gatekeeper.results import Status
from gatekeeper.verdict import decide
from report_runs import _check
from report_runs_causes import EOS_CASES, golden_causes_gate


def _ids(groups: tuple[tuple[object, ...], ...]) -> list[list[str]]:
    return [[c.id for c in g] for g in groups]  # type: ignore[attr-defined]


def test_one_cause_is_one_group() -> None:
    """Five eos cases that fail alike — each its own words, numbers and diff — are one group,
    where the first of them stood; the two JSON cases alike are another."""
    failing = [c for c in golden_causes_gate().checks if c.status is not Status.PASS]
    assert _ids(group_failures(failing)) == [
        [f"golden.{case}" for case in EOS_CASES], ["golden.json-facts-4", "golden.json-schema-2"],
        ["golden.code-2"], ["golden.tool-weather"], ["golden.pass_rate"]]
    assert signature(failing[0]).cause == (
        "FAIL: regression, the reference passes equals: expected exactly '…', got '…'; "
        "the reference agrees with itself across # runs")


def test_different_causes_are_different_groups() -> None:
    """Another wording, another family, another status or another gate is another cause."""
    one = _check("golden", "eos-1", Status.FAIL, "expected exactly 'tiger', got 'tige'", family="eos")
    others = [
        replace(one, id="golden.eos-2", reason="finish_reason 'length', expected 'stop'"),
        replace(one, id="golden.echo-1", family="short_answer"),
        replace(one, id="golden.eos-3", status=Status.ERROR),
        replace(one, id="longctx.eos-1", gate="longctx"),
        replace(one, id="golden.eos-4", family=None),
    ]
    assert len({signature(c) for c in [one, *others]}) == 6
    assert [len(g) for g in group_failures([one, *others])] == [1] * 6


def test_a_single_failing_check_is_a_group_of_one() -> None:
    only = _check("golden", "eos-1", Status.FAIL, "expected exactly 'tiger', got 'tige'", family="eos")
    assert group_failures([only]) == ((only,),)
    assert group_failures([]) == ()


def test_only_fail_and_error_are_grouped() -> None:
    """Blocking skips and undecided checks say what was not asked: each stays its own card."""
    skips = [_check("golden", f"tool-{i}", Status.SKIP, "needs tool calls, which the candidate lacks") for i in (1, 2)]
    undecided = [replace(c, status=Status.WARN, undecided=True) for c in skips]
    assert [len(g) for g in group_failures(skips + undecided)] == [1, 1, 1, 1]


def test_mask_keeps_the_words_and_masks_what_varies() -> None:
    said = ("FAIL: regression: both miss equals, but the candidate's answer differs in every run (2): expected "
            "exactly '5138816', got \"it's 5\"; p99_logprob_delta 0.31 > 1e-3 at c4, 32.8% of cases, NaN")
    assert mask(said) == ("FAIL: regression: both miss equals, but the candidate's answer differs in every run (#): "
                          "expected exactly '…', got '…'; p99_logprob_delta # > # at c4, #% of cases, #")
    assert mask("connect error at http://127.0.0.1:41002/v1/chat (HTTP 500): request 0123456789abcdef0123 failed") == (
        "connect error at <url> (HTTP #): request <id> failed")
    assert mask("read /tmp/run-7/answers/x.json: cut '{\"a\": 1'…  and\n more") == "read <path>: cut '…' and more"
    assert mask("case json-facts-4.stream differs from json-facts-4", ["json-facts-4.stream", "json-facts-4"]) == (
        "case <case> differs from <case>")


def test_a_check_s_own_name_is_masked() -> None:
    """A reason that names its own case groups with its siblings' reasons that name theirs."""
    a = _check("golden", "eos-1", Status.FAIL, "case eos-1 ran past its end (golden.eos-1)", family="eos")
    b = replace(a, id="golden.eos-22", reason="case eos-22 ran past its end (golden.eos-22)")
    assert signature(a) == signature(b) and signature(a).cause == "case <case> ran past its end (<case>)"


def test_the_verdict_gives_one_reason_per_cause() -> None:
    """The verdict's reasons follow the same groups: the five eos cases are one reason naming the
    other four, so the second cause is the second line, not the sixth."""
    verdict, reasons = decide([golden_causes_gate()])
    eos = [f"golden.{case}" for case in EOS_CASES]
    assert verdict.value == "ROLLBACK" and reasons[0].startswith(f"{eos[0]}: FAIL")
    assert reasons[0].endswith(f"(and {len(eos) - 1} more checks of this cause: {', '.join(eos[1:])})"), reasons[0]
    assert reasons[1].startswith("golden.json-facts-4: FAIL") and "golden.json-schema-2" in reasons[1]
    assert not any(r.startswith(tuple(f"{c}:" for c in eos[1:])) for r in reasons)
