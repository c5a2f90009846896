"""The evaluation command on the shipped gk-tiny: every family is scored, the table renders, and
a case counts as right only when the output is exactly the generator's answer."""

from __future__ import annotations

import random

import pytest

pytest.importorskip("torch")

from gatekeeper import tasks  # noqa: E402
from gatekeeper.training import evaluate  # noqa: E402
from paths import GK_TINY

pytestmark = pytest.mark.slow  # ~25 s in all (a module fixture evaluates the trained model); suite time


@pytest.fixture(scope="module")
def report() -> dict:
    if not (GK_TINY / "model.safetensors").is_file():
        pytest.skip(f"gk-tiny is not trained yet: no {GK_TINY}/model.safetensors")
    return evaluate.evaluate(str(GK_TINY), n=8, seed=1000, log=lambda s: None)


def test_every_family_is_scored_against_its_target(report):
    rows = {r["family"]: r for r in report["families"]}
    assert set(rows) == set(tasks.FAMILIES)
    for family, row in rows.items():
        assert row["target"] == evaluate.TARGETS[family]
        cases = report["cases"][family]
        if family == "needle":
            cases = [c for c in cases if c["meta"]["grid_length"] <= 1024]
        elif family == "multi_turn":
            cases = [c for c in cases if c["meta"]["round"] == 10]
        assert row["n"] == len(cases) and row["accuracy"] == sum(c["correct"] for c in cases) / len(cases)
    assert rows["multi_turn"]["n"] == 8  # round 10 (the target's round) gets n chats, other rounds n/4
    # What gk-tiny does reliably (README): end its turn, refuse, write the template code.
    assert rows["eos"]["accuracy"] == 1.0 and rows["refusal"]["accuracy"] == 1.0 and rows["code"]["accuracy"] >= 0.75


@pytest.mark.parametrize("family", ["echo", "arithmetic", "json", "tool_call", "eos"])
def test_cases_come_from_the_held_out_stream_and_are_scored_by_the_generator(report, family):
    rng = random.Random(f"eval:1000:{family}")  # a stream training never draws from
    samples = [tasks.generate(family, rng) for _ in range(8)]
    cases = report["cases"][family]
    assert [c["answer"] for c in cases] == [s.answer for s in samples]
    for s, c in zip(samples, cases):
        assert c["correct"] == (tasks.score(s, c["output"]) and (c["stopped"] or not s.meta.get("needs_eos"))), c


def test_render_shows_the_table_the_grid_and_the_curve(report):
    text = evaluate.render(report)
    for family in tasks.FAMILIES:
        assert f"\n{family:<14}" in text
    assert "needle retrieval, prompt tokens x depth" in text and "multi-turn recall by round" in text
    assert ("SHORT" in text) == any(r["target"] is not None and r["accuracy"] < r["target"] for r in report["families"])


def test_breakdown_splits_a_family_by_sample_kind(report):
    ops = report["breakdown"]["arithmetic"]["op"]
    cases = report["cases"]["arithmetic"]
    assert set(ops) == {c["meta"]["op"] for c in cases} and sum(g["n"] for g in ops.values()) == len(cases)
    for op, g in ops.items():
        mine = [c for c in cases if c["meta"]["op"] == op]
        assert g["accuracy"] == sum(c["correct"] for c in mine) / len(mine)
    assert "round" not in report["breakdown"]["multi_turn"]  # the recall curve shows rounds
    assert "arithmetic    op: " in evaluate.render(report)
