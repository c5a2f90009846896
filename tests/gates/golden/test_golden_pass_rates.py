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


def test_precision_flips_count_as_passed_up_to_the_limit():
    """A case the candidate lost to a precision flip (it follows the reference's forced answer but
    for near ties) counts as passed while there are at most `max_precision_flips`; beyond that the
    rates read as measured (the flips as failures) and the summary says how many there were."""
    rates = PassRates()
    for i in range(10):
        rates.add("short_answer", candidate_ok=i >= 2, reference_ok=True, status=Status.PASS, precision_flip=i < 2)
    assert rates.precision_flips == 2
    assert rates.finding(0.0, 2).pass_rate == 1.0 and rates.finding(0.0, 2).precision_flips == 2
    assert rates.finding(0.0, 1).pass_rate == 0.8
    assert rates.table(2).rows[0][2] == "100.0%" and rates.table(1).rows[0][2] == "80.0%"
    plain = PassRates()
    plain.add("short_answer", True, True, Status.PASS, precision_flip=True)  # a flip only counts as a lost case
    assert plain.precision_flips == 0 and plain.finding(0.0).precision_flips is None
