"""The stage rule both the replay gate and the live verdict apply: a fired measure first, then
nothing judged (never a pass), then the score's bands."""

from __future__ import annotations

from gatekeeper.traffic.stage_rule import Standing, standing


def test_a_fired_measure_stands_above_everything_else():
    assert standing(True, 0, 100.0, 75.0, 95.0) is Standing.FIRED
    assert standing(True, 50, 100.0, 75.0, 95.0) is Standing.FIRED


def test_nothing_judged_is_not_a_clean_stage_whatever_the_default_score():
    assert standing(False, 0, 100.0, 75.0, 95.0) is Standing.NOT_JUDGED


def test_the_score_bands():
    assert standing(False, 10, 70.0, 75.0, 95.0) is Standing.BELOW_MARGINAL
    assert standing(False, 10, 80.0, 75.0, 95.0) is Standing.MARGINAL
    assert standing(False, 10, 95.0, 75.0, 95.0) is Standing.CLEAN
