"""Charts first: key charts marked by the gates, kept through records.jsonl, ordered and drawn
on the pages; the performance page's own reasons; numbers with units and no blind scores."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from html import unescape

from gatekeeper import evidence as ev
from gatekeeper.gates.golden.pass_rates import PassRates
from gatekeeper.traffic.analysis import MetricResult, SliceResult
from gatekeeper.gates.shadow.evidence import slice_table as _slice_table
from gatekeeper.report import render_correctness_html, render_performance_html
from gatekeeper.report.charts import intervals_svg, line_chart_svg
from gatekeeper.report.evidence_view import fmt_metric, fmt_value
from gatekeeper.report.key_charts import key_charts
from gatekeeper.report.performance.reasons import performance_reasons
from gatekeeper.report.serialise import check_json
from gatekeeper.report.gate_view import failures
from gatekeeper.results import Status
from gatekeeper.run.run_dir import _check
from report_runs import _check as make_check
from report_runs import _gate, hold_run, rollback_run
from report_runs_charts import partial_promote_run, perf_rollback_run, promote_full_run, shadow_rollback_run


def test_the_key_mark_survives_records_jsonl() -> None:
    intervals = ev.Intervals("ratio", (ev.Interval("tok/s at c4", 0.6, 0.55, 0.66, 0.97),), 1.0, "candidate / baseline",
                             is_key=True)
    kinds = [intervals, ev.Histogram("h", [0.1], "l", 0.2, is_key=True), ev.Series("s", [1], {"a": [1.0]}, is_key=True),
             ev.Heatmap("m", ["r"], ["c"], [[1.0]], is_key=True), ev.Table("t", ["x"], [[1]]), ev.TextPair("p", "a", "b")]
    check = make_check("performance", "c4.output_tokens_per_s", Status.FAIL, "slower", evidence=tuple(kinds))
    line = json.loads(json.dumps(check_json(check, standalone=True) | {"format": "gatekeeper.record/1"}))
    assert [e.get("key", False) for e in line["evidence"]] == [True, True, True, True, False, False]
    assert _check(line).evidence == tuple(kinds)  # a resumed run's report keeps its key charts
    assert replace(ev.Table("t", ["x"], [[1]]), is_key=True).is_key  # every kind takes the mark


def test_charts_of_checks_against_the_run_come_first() -> None:
    charts = key_charts(shadow_rollback_run().gates)
    assert charts[0].check_id == "shadow.stage.quarter" and charts[0].against
    assert [k.check_id for k in charts[1:3]] == ["shadow.stage.low-risk-tenant", "numerics.max_logprob_delta"]  # its gate next
    assert key_charts(partial_promote_run().gates)[0].check_id == "golden.pass_rate"  # gates not run draw nothing
    assert key_charts(hold_run().gates) == ()


def test_a_gates_key_intervals_are_one_forest_plot_coloured_by_status() -> None:
    charts = key_charts(perf_rollback_run().gates)
    forest = next(k for k in charts if k.gate == "6. Performance")
    assert forest.check_id == "performance.c4.output_tokens_per_s" and forest.status == "FAIL"
    svg = str(forest.view.chart)
    assert svg.count("<circle") == 2 and "UNDECIDED" in svg and "FAIL" in svg and "1 (no change)" in svg
    assert sum(k.gate == "6. Performance" for k in charts) == 3  # the forest and the two capacity curves


def test_coinciding_lines_both_show() -> None:
    svg = str(line_chart_svg([1, 2, 3], {"reference": [1.0, 0.9, 0.8], "candidate": [1.0, 0.9, 0.8]}, "round", "pass rate"))
    lines = re.findall(r"<polyline[^>]*>", svg)
    assert len(lines) == 2 and 'stroke-width="5"' in lines[0] and 'stroke-dasharray="7 4"' in lines[1]
    assert "<circle" in svg and "<rect" in svg  # different markers too
    assert "&lt;b&gt;" in intervals_svg([(ev.Interval("<b>", 1.0, 0.9, 1.1, None), "")], 1.0, "r", "t")


def test_numbers_in_views_are_short() -> None:
    assert fmt_value([0.12345678901234567, {"a": 1 / 3}]) == '[0.1235, {"a": 0.3333}]'
    assert (fmt_metric("ttft_p95_s", 0.041351234), fmt_metric("startup_s", 5.17), fmt_metric("requests_per_s", 27.4512)) == (
        "41.35 ms", "5.17 s", "27.45")
    html = render_performance_html(perf_rollback_run())
    assert not re.search(r"\d\.\d{9,}", html.split("<svg", 1)[0])  # the tables before the charts
    assert "878.3 tok/s" in html and "3.43 ms" in html


def test_the_performance_page_states_its_own_reasons() -> None:
    reasons = performance_reasons(perf_rollback_run())
    assert reasons.status.startswith("performance gate: FAIL")
    assert [href for href, _ in reasons.reasons] == ["#check-performance.c4.output_tokens_per_s",
                                                      "#check-performance.c4.tpot_p50_s", "#check-performance.capacity"]
    assert "UNDECIDED (advisory)" in reasons.reasons[1][1] and not reasons.elsewhere
    html = render_performance_html(perf_rollback_run())
    assert "the reasons are in the" not in html.lower()
    assert html.index('id="verdict"') < html.index("performance.c4.output_tokens_per_s: FAIL") < html.index('id="perf-table"')
    skipped = performance_reasons(shadow_rollback_run())
    assert "not measured: correctness did not pass" in skipped.reasons[0][1] and "rests on the correctness gates" in skipped.elsewhere
    assert performance_reasons(partial_promote_run()).status == "performance gate: not run (not selected by --gates)"
    assert performance_reasons(rollback_run()).status == "performance gate: not in this run"


def test_the_two_kinds_of_ratio_say_what_they_are_against() -> None:
    html = unescape(render_performance_html(promote_full_run()))
    assert "the baseline being the candidate's launch without faults (bundled:optimized)" in html
    assert "The ratios here are candidate / reference, not against the performance gate's baseline" in html


def test_the_capacity_row_says_what_the_knee_is() -> None:
    html = render_performance_html(perf_rollback_run())
    assert "knee: highest concurrency with every level up to it within the SLOs (TTFT p95 ≤ 80 ms)" in html
    assert "concurrency 2" in html and "in the policy&#39;s unit" in html


def test_the_correctness_page_reads_verdict_table_charts_failures_gates() -> None:
    html = render_correctness_html(shadow_rollback_run())
    order = [html.index(s) for s in ('id="verdict"', 'id="seed-table"', 'id="key-charts"', 'id="failures"',
                                     'id="gate-startup"', 'id="targets"')]
    assert order == sorted(order)
    assert 'href="performance.html#check-' not in html  # no performance reason here; one would link to its page
    perf = render_correctness_html(perf_rollback_run())
    assert '<a href="performance.html#check-performance.c4.output_tokens_per_s">' in perf


def test_a_slice_that_judged_nothing_has_no_score() -> None:
    nodata = MetricResult(name="disagreement", critical=True, label="Nodata", candidate_rate=None, twin_rate=None, eligible=0, p_value=None,
                          e_value=None, effect=None)
    judged = MetricResult(name="disagreement", critical=True, label="Pass", candidate_rate=0.0, twin_rate=0.0, eligible=420, p_value=None,
                          e_value=1.0, effect=0.0, upper=0.012, materiality=0.03)
    rows = _slice_table([SliceResult("all", 420, 420, {}, (judged,), 100.0),
                         SliceResult("tenant=batch", 3, 0, {"reference failed": 3}, (nodata,), 100.0)]).rows
    assert rows[0][3] == "100" and rows[1][3] == "not judged"


def test_a_slice_whose_pass_could_hide_a_material_regression_reads_undecided_not_100() -> None:
    """1 of 22 answers changed (4.5% vs the twin's 0.0%): not fired, but its bound (24%) is far above
    the 3% that matters — the score would read 100 beside that rate."""
    few = MetricResult(name="disagreement", critical=True, label="Pass", candidate_rate=1 / 22, twin_rate=0.0, eligible=22, p_value=0.5,
                       e_value=2.0, effect=1 / 22, upper=0.24, materiality=0.03)
    ok = MetricResult(name="error", critical=True, label="Pass", candidate_rate=0.0, twin_rate=0.0, eligible=22, p_value=1.0, e_value=1.0,
                      effect=0.0, upper=0.01, materiality=0.02)
    fired = MetricResult(name="error", critical=True, label="Fired", candidate_rate=0.3, twin_rate=0.0, eligible=22, p_value=0.001,
                         e_value=900.0, effect=0.3, fired_at=20, upper=0.5, materiality=0.02)
    rows = _slice_table([SliceResult("tenant=acme", 22, 22, {}, (few, ok), 100.0),
                         SliceResult("tenant=beta", 22, 22, {}, (few, fired), 0.0)]).rows
    assert rows[0][3] == "undecided: disagreement" and rows[0][4] == "4.5% / 0.0%"
    assert rows[1][3] == "0"  # a fired measure decides the slice


def test_the_golden_pass_rate_draws_a_key_heatmap() -> None:
    rates = PassRates()
    rates.add("eos", candidate_ok=True, reference_ok=True, status=Status.PASS)
    rates.add("json", candidate_ok=None, reference_ok=None, status=Status.ERROR)
    heat = rates.heatmap()
    assert heat.is_key and heat.rows == ("eos", "json") and heat.values == ((1.0, 1.0), (None, None))
    assert heat.labels == (("1/1", "1/1"), ("not judged", "not judged"))


def test_a_gate_left_out_draws_no_key_chart() -> None:
    hist = ev.Histogram("h", [0.1], is_key=True)
    gate = _gate("numerics", 2, "Numerical consistency", [make_check("numerics", "x", Status.PASS, "ok", evidence=(hist,))])
    assert len(key_charts((gate,))) == 1
    assert key_charts((replace(gate, excluded="not selected by --gates"),)) == ()


def test_a_gate_stopped_by_an_earlier_one_is_not_run_not_a_failure() -> None:
    stopped = _gate("performance", 6, "Performance", [make_check("performance", "not_run", Status.SKIP,
                                                                  "not run: gate 1 (startup) failed")], coverage=None)
    run = replace(rollback_run(), gates=(*rollback_run().gates, stopped))
    assert performance_reasons(run).status == "performance gate: not run (gate 1 (startup) failed)"
    assert failures((stopped,)) == ()
    assert 'id="failures"' not in render_performance_html(run) and 'id="perf-table"' not in render_performance_html(run)
