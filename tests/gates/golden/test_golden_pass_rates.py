"""The golden gate's key chart shows the streamed variants beside their family: a ROLLBACK on a
broken streaming tool parser has a red row on the chart, not an all-green heatmap."""

from __future__ import annotations

from gatekeeper.gates.golden.pass_rates import PassRates
from gatekeeper.results import Status


def test_streamed_variants_are_rows_below_their_family_and_not_pass_rates():
    rates = PassRates()
    for _ in range(3):
        rates.add("tool_call", True, True, Status.PASS)
    rates.add("json", True, True, Status.PASS)
    for status in (Status.FAIL, Status.FAIL, Status.PASS, Status.SKIP):
        rates.add_stream("tool_call", status)
    heat = rates.heatmap()
    assert heat.rows == ("json", "tool_call", "tool_call · streamed")
    assert heat.labels[2] == ("–", "1/3") and heat.values[2] == (None, 1 / 3)  # the SKIP was not judged
    assert rates.finding(0.05).pass_rate == 1.0  # the variants are not cases
    assert "streamed" in heat.title
    assert PassRates().heatmap().title == "cases passed by family: reference, candidate (green all, red none)"
