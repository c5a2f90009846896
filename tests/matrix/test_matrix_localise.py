"""The localisation of failing matrix cells: the smallest separating condition, in the terms of
docs/bug-classes.md#fused-norm-matrix."""

from __future__ import annotations

import itertools

from gatekeeper.matrix.localise import localise

AXES = ("dtype", "tp", "fused_norm", "prefix_caching")


def _grid(tps=(1, 2)) -> dict[str, dict[str, object]]:
    cells = {}
    for dtype, tp, fused, prefix in itertools.product(("float32", "bfloat16"), tps, ("off", "on"), ("on", "off")):
        cells[f"{dtype}-tp{tp}-{fused}-{prefix}"] = {"dtype": dtype, "tp": tp, "fused_norm": fused, "prefix_caching": prefix}
    return cells


def test_the_fused_norm_bug_is_localised_as_the_seed_describes_it():
    cells = _grid()
    failed = {cid: c["dtype"] == "bfloat16" and c["tp"] > 1 and c["fused_norm"] == "on" for cid, c in cells.items()}
    loc = localise(cells, failed, AXES)
    assert loc.exact and [str(lit) for lit in loc.literals] == ["dtype=bfloat16", "tp>1", "fused_norm=on"]
    assert loc.sentence() == ("fails when dtype=bfloat16 and tp>1 and fused_norm=on; dtype=float32 passes; "
                              "tp=1 passes; fused_norm=off passes")


def test_a_threshold_on_a_numeric_axis_with_several_values():
    cells = _grid(tps=(1, 2, 4))
    failed = {cid: c["tp"] >= 4 for cid, c in cells.items()}
    loc = localise(cells, failed, AXES)
    assert [str(lit) for lit in loc.literals] == ["tp>2"] and "tp passes" not in loc.sentence()


def test_no_exact_condition_gives_the_closest_and_names_the_cells_it_gets_wrong():
    cells = _grid()
    failed = {cid: c["fused_norm"] == "on" for cid, c in cells.items()}
    odd = "float32-tp1-off-on"
    failed[odd] = True  # a flaky cell
    loc = localise(cells, failed, AXES)
    assert not loc.exact and loc.misclassified == (odd,) and "misclassifies" in loc.sentence()


def test_unjudged_cells_are_left_out_and_named():
    cells = _grid()
    failed: dict[str, bool | None] = {cid: c["prefix_caching"] == "off" for cid, c in cells.items()}
    failed["bfloat16-tp2-on-on"] = None
    loc = localise(cells, failed, AXES)
    assert [str(lit) for lit in loc.literals] == ["prefix_caching=off"] and loc.unjudged == ("bfloat16-tp2-on-on",)
    assert "not judged: bfloat16-tp2-on-on" in loc.sentence()


def test_nothing_failed_or_everything_failed():
    cells = _grid()
    assert localise(cells, dict.fromkeys(cells, False), AXES).sentence() == "no cell failed"
    assert "nothing on the matrix's axes" in localise(cells, dict.fromkeys(cells, True), AXES).sentence()
