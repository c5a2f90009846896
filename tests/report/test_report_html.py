"""The HTML reports and the performance summary as data: escaping, self-containment, the
divergence mark, charts, and the "not meaningful" flag."""

from __future__ import annotations

import re
from dataclasses import replace

from markupsafe import escape

import pytest

from gatekeeper.report.charts import bar_chart_svg, histogram_svg, line_chart_svg
from gatekeeper.report import render_correctness_html, render_performance_html
from gatekeeper.report.performance.summary import summarize_performance
from gatekeeper.stats.quantiles import percentile
from gatekeeper.report.textdiff import first_divergence, text_pair
from gatekeeper.report.evidence_view import evidence_view
from gatekeeper.evidence import from_json
from gatekeeper.results import RequestTiming, Status, Verdict
from report_runs import XSS, hold_run, promote_run, rollback_run
from report_runs_charts import partial_promote_run


@pytest.fixture(scope="module")
def correctness() -> str:
    return render_correctness_html(rollback_run())


def test_model_output_is_escaped(correctness: str) -> None:
    assert XSS not in correctness
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in correctness
    assert "Say done &amp; stop &lt;now&gt;" in correctness


@pytest.mark.parametrize("render", [render_correctness_html, render_performance_html])
@pytest.mark.parametrize("make_run", [rollback_run, promote_run, hold_run])
def test_pages_are_self_contained(render, make_run) -> None:  # type: ignore[no-untyped-def]
    html = render(make_run())
    assert "<script" not in html  # no scripts of our own, and model output is escaped
    assert not re.search(r"""\b(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "@import" not in html and "url(" not in html
    assert '<meta charset="utf-8">' in html


def test_verdict_reasons_and_gate_sections_come_in_order(correctness: str) -> None:
    verdict = correctness.index("Verdict: ROLLBACK")
    reason = correctness.index("numerics.logprob_delta FAIL (blocking)")
    sections = [correctness.index(f'id="gate-{g}"') for g in ("startup", "numerics", "golden")]
    assert verdict < reason < sections[0] < sections[1] < sections[2]
    assert "What the Numerical consistency gate checks. Second line of the description." in correctness


def test_divergence_is_marked(correctness: str) -> None:
    assert 'The capital of France is <mark class="divergence">Paris.</mark>' in correctness
    assert 'The capital of France is <mark class="divergence">!!!!!!!!</mark>' in correctness
    # the shorter side of a pair shows where it ended
    assert 'Done.<mark class="divergence">[end of text]</mark>' in correctness


def test_failing_checks_open_their_evidence(correctness: str) -> None:
    block = correctness[correctness.index('id="check-numerics.logprob_delta"') :]
    assert block.index("<details open>") < block.index("numerics-03 greedy continuation")


def test_first_divergence() -> None:
    assert first_divergence("abc", "abc") is None
    assert first_divergence("abc", "abd") == 2
    assert first_divergence("ab", "abc") == 2
    assert first_divergence("", "x") == 0


def test_text_pair_recomputes_a_bad_divergence_and_shortens_long_text() -> None:
    pair = text_pair(
        "t", {"reference": "same" * 1000 + "A", "candidate": "same" * 1000 + "B", "divergence": 10**9}
    )
    assert pair.divergence == 4000
    assert pair.reference.tail == "A" and pair.candidate.tail == "B"
    assert pair.reference.omitted_before == 2000 and len(pair.reference.prefix) == 2000
    same = text_pair("t", {"reference": "x", "candidate": "x"})
    assert same.identical and same.reference.tail == "" and not same.reference.ended


def test_control_characters_are_shown_not_hidden() -> None:
    pair = text_pair("t", {"reference": "a\x1bb\tc\n", "candidate": "a\x00b\tc\n", "prompt": "p\x07"})
    assert pair.divergence == 1
    assert pair.reference.tail == "\u241bb\tc\n" and pair.candidate.tail == "\u2400b\tc\n"
    assert pair.prompt == "p\u2407"


def test_docstring_paragraphs() -> None:
    from gatekeeper.report.gate_view import paragraphs

    doc = "Title line.\n\nWrapped\ntext.\n- item one\n  continues\n- item two\n\n"
    assert paragraphs(doc) == ("Title line.", "Wrapped text.\n- item one continues\n- item two")


def test_code_spans_in_descriptions() -> None:
    from gatekeeper.report.gate_view import code_spans

    assert code_spans("run `gatekeeper run` now `<x>`") == (
        ("run ", False),
        ("gatekeeper run", True),
        (" now ", False),
        ("<x>", True),
    )
    assert code_spans("no code") == (("no code", False),)
    html = render_correctness_html(
        replace(promote_run(), gates=(replace(promote_run().gates[0], description="Use `a<b`."),))
    )
    assert "Use <code>a&lt;b</code>." in html


def test_malformed_evidence_falls_back_to_json() -> None:
    view = evidence_view(from_json("table", "broken", {"rows": [[1]]}))
    assert view.kind == "json" and "could not be drawn" in view.note
    assert evidence_view(from_json("mystery", "m", [1, 2])).kind == "json"
    not_a_dict = evidence_view(from_json("text_pair", "pair", "just a string"))
    assert not_a_dict.kind == "json" and "malformed 'text_pair'" in not_a_dict.note


def test_charts_escape_their_text_and_fit() -> None:
    svg = histogram_svg([0.1, 0.2, float("nan"), float("inf")], "<b>label</b>", threshold=0.15)
    assert "<b>" not in svg and "&lt;b&gt;" in svg
    assert 'width="100%"' in svg and "2 non-finite not plotted" in svg
    assert "no finite values" in histogram_svg([float("nan")], "x")
    bars = bar_chart_svg([("<fam>", 0.5, "(1/2)")], "pass rate")
    assert "&lt;fam&gt;" in bars
    line = line_chart_svg([1, 2, 3], {"a<": [1.0, float("nan"), 2.0]}, "round", "score")
    assert "polyline" in line and "a&lt;" in line


def test_percentile() -> None:
    assert percentile([], 50) is None
    assert percentile([3.0], 95) == 3.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert percentile(list(map(float, range(101))), 95) == pytest.approx(95.0)


def test_performance_figures() -> None:
    run = replace(
        promote_run(),
        timings=(
            RequestTiming("candidate", "golden", 1.0, 0.1, 10),  # tpot = 0.9 / 9 = 0.1
            RequestTiming("candidate", "golden", 2.0, None, 30),  # not streamed: no ttft/tpot
            RequestTiming("reference", "golden", 2.0, 0.2, 1),  # one token: no tpot
        ),
    )
    perf = summarize_performance(run)
    cand = next(p for p in perf.targets if p.role == "candidate")
    assert (cand.num_requests, cand.num_streamed, cand.output_tokens) == (2, 1, 40)
    assert cand.ttft_s.p50 == pytest.approx(0.1) and cand.tpot_s.p50 == pytest.approx(0.1)
    assert cand.output_tokens_per_s == pytest.approx(40 / 3.0)
    assert cand.startup_s == 1.5 and cand.meaningful
    ref = next(p for p in perf.targets if p.role == "reference")
    assert ref.tpot_s.count == 0 and ref.tpot_s.p50 is None
    assert perf.candidate_vs_reference["e2e_p50"] == pytest.approx(1.5 / 2.0)


def test_performance_not_meaningful_without_correctness() -> None:
    perf = summarize_performance(rollback_run())
    by_role = {p.role: p for p in perf.targets}
    assert by_role["reference"].meaningful
    assert not by_role["candidate"].meaningful
    assert "ROLLBACK" in (by_role["candidate"].not_meaningful_reason or "")
    numerics = [p for p in perf.by_gate if p.scope == "numerics" and p.role == "candidate"]
    assert numerics and "gate numerics did not pass" in (numerics[0].not_meaningful_reason or "")
    html = render_performance_html(rollback_run())
    assert "Candidate figures are not meaningful" in html
    assert "Candidate figures are not meaningful" not in render_performance_html(promote_run())


def test_gate_failure_flags_its_rows_even_when_promoted() -> None:
    run = promote_run()
    failed = replace(run.gates[1], status=Status.FAIL)
    perf = summarize_performance(replace(run, gates=(run.gates[0], failed), verdict=Verdict.PROMOTE))
    golden = next(p for p in perf.by_gate if p.scope == "golden" and p.role == "candidate")
    assert not golden.meaningful
    assert next(p for p in perf.targets if p.role == "candidate").meaningful


def test_every_evidence_kind_round_trips_through_its_json_form() -> None:
    from gatekeeper import evidence as ev

    kinds = [ev.TextPair("p", "a", "b", 0, "q"), ev.Table("t", ["x"], [[1, "y"]]), ev.Histogram("h", [0.1, 0.2], "l", 0.15),
             ev.Series("s", [1, 2], {"r": [1.0, 0.5]}, "round", "rate"), ev.Heatmap("m", ["r"], ["c"], [[0.5]], [["≠"]]),
             ev.Log("g", ["a", "b"]), ev.JsonValue("j", {"k": [1]})]
    for e in kinds:
        assert ev.from_json(e.kind, e.title, e.data) == e
        assert evidence_view(e).kind != "json" or e.kind == "json"


def test_reasons_link_to_their_checks_and_passing_checks_fold_away(correctness: str) -> None:
    assert '<a href="#check-numerics.logprob_delta">numerics.logprob_delta FAIL (blocking)' in correctness
    gate = correctness[correctness.index('id="gate-numerics"'):correctness.index('id="gate-golden"')]
    folded = gate.index('<details class="passing">')
    # what failed is shown once, under Failures above the gates; its gate points at it
    assert 'href="#check-numerics.logprob_delta">numerics.logprob_delta</a> — shown under Failures above' in gate
    assert correctness.count('id="check-numerics.logprob_delta"') == 1
    assert correctness.index('id="failures"') < correctness.index('id="check-numerics.logprob_delta"') < correctness.index(
        'id="gate-startup"')
    assert "1 passing check</summary>" in gate[folded:] and 'id="check-numerics.' in gate[folded:]


def test_each_key_chart_is_drawn_once_and_the_gates_have_a_script_free_status_filter(correctness: str) -> None:
    """A key chart (not an interval: those of a gate are drawn together) is drawn under Key charts;
    its check's card names it there instead of drawing it again. Radio buttons, no script, choose
    which checks the gate sections show, every check carrying its status as a class."""
    key = [ev for g in rollback_run().gates for c in g.checks for ev in c.evidence
           if ev.is_key and ev.kind != "intervals"]
    assert key  # the fixture has some
    for ev in key:
        title = re.escape(str(escape(ev.title)))
        assert len(re.findall(rf"<h4>{title}</h4>", correctness)) == 2, ev.title  # the key chart, and the card's pointer
    assert correctness.count("drawn under Key charts at the top of this page") == len(key)
    for mode in ("show-all", "show-open", "show-bad"):
        assert f'type="radio" class="show" name="show" id="{mode}"' in correctness
    assert "#show-bad:checked ~ section .check:not(.st-FAIL):not(.st-ERROR)" in correctness
    assert re.search(r'<div class="check st-(PASS|FAIL|WARN|SKIP|ERROR|UNDECIDED)" id="check-', correctness)


def test_a_gate_that_did_not_run_says_not_run_not_skip() -> None:
    """A gate left out by --gates rolls nothing up: its badge (table of contents and section) says
    "not run", never SKIP or FAIL; the gates that ran keep their status."""
    html = render_correctness_html(partial_promote_run())
    toc = re.search(r'<nav class="toc">(.*?)</nav>', html, re.S).group(1)  # type: ignore[union-attr]
    badges = dict(re.findall(r'href="#gate-(\w+)">[^<]*<span class="badge [^"]*">([^<]*)</span>', toc))
    ran = {g.id: g.status.value for g in partial_promote_run().gates if g.excluded is None}
    assert badges == {**ran, "numerics": "not run", "longctx": "not run", "shadow": "not run"} and "SKIP" not in badges.values()
    assert '<span class="badge badge-not-run">not run</span>' in html
