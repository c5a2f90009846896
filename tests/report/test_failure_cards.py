"""The Failures section of correctness.html: one card per cause (gatekeeper/signature.py), two examples
in full (the diff before the metrics), the rest folded with their anchors kept; a gate's long
description folded under "about this gate"."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from gatekeeper.report import render_correctness_html
from gatekeeper.report.gate_view import failures, gate_view
from gatekeeper.results import Status
from report_runs import _check, _gate, rollback_run
from report_runs_causes import EOS_CASES, same_cause_run


@pytest.fixture(scope="module")
def page() -> str:
    return render_correctness_html(same_cause_run())


def _failures(html: str) -> str:
    return html[html.index('id="failures"'):html.index('<nav class="toc">')]


def test_one_card_per_cause_with_two_examples_in_full(page: str) -> None:
    section = _failures(page)
    assert "10 checks against the run" in section and "5 cards, one per cause" in section
    card = section[section.index('id="cause-golden.eos-1"'):section.index('id="check-golden.json-facts-4"')]
    assert "5 checks, one cause" in card and "expected exactly &#39;…&#39;, got &#39;…&#39;" in card
    full = re.findall(r'<div class="check[^"]*" id="check-([^"]+)"', card)
    assert full == ["golden.eos-1", "golden.eos-2"]
    rest = card[card.index('<details class="rest">'):]
    assert "3 more checks with this cause" in rest
    assert re.findall(r'<li id="check-([^"]+)"', rest) == [f"golden.{c}" for c in EOS_CASES[2:]]
    assert "expected exactly &#39;amber&#39;, got &#39;ambe&#39;" in rest  # each folded check's own reason
    assert 'class="reference' not in rest and "Say amber." not in rest  # no diff, no metrics: one line each


def test_every_check_keeps_one_anchor_and_every_reason_link_lands(page: str) -> None:
    run = same_cause_run()
    anchors = re.findall(r'id="check-([^"]+)"', page)
    assert sorted(anchors) == sorted(c.id for g in run.gates for c in g.checks)
    for href in re.findall(r'<a href="#(check-[^"]+)">', page):
        assert f'id="{href}"' in page, href


def test_a_card_of_one_is_the_check_s_own_card(page: str) -> None:
    """A cause that failed one check shows that check as before, not a card for a cause."""
    section = _failures(page)
    assert re.search(r'</div>\s*<div class="check[^"]*" id="check-golden.code-2">', section)
    assert 'id="cause-golden.code-2"' not in section
    rollback = render_correctness_html(rollback_run())
    assert 'class="cause"' not in rollback and "one cause" not in rollback


def test_a_failing_card_shows_its_diff_before_its_metrics(page: str) -> None:
    card = page[page.index('id="check-golden.eos-1"'):page.index('id="check-golden.eos-2"')]
    assert "<summary>evidence and metrics</summary>" in card
    assert card.index("<h4>reference vs candidate</h4>") < card.index('class="data metrics"')


def test_the_gate_points_at_each_card_once(page: str) -> None:
    gate = page[page.index('id="gate-golden"'):]
    assert gate.count("shown under Failures above") == 5
    assert '<a href="#cause-golden.eos-1">5 checks, one cause</a> (eos)' in gate
    assert '<a class="mono" href="#check-golden.code-2">golden.code-2</a> — shown under Failures above' in gate
    groups = failures(same_cause_run().gates)
    assert [g.size for g in groups] == [5, 2, 1, 1, 1] and groups[0].grouped and not groups[2].grouped


def test_a_long_description_folds_under_about_this_gate() -> None:
    gate = replace(_gate("golden", 3, "Golden prompts", [_check("golden", "x", Status.PASS, "ok")]),
                   description="Gate 3 — golden prompts.\n\nWhat it asks, at length.\n\nA failure looks like `!!!!`.")
    view = gate_view(gate, {s: 0 for s in Status})
    assert view.lead == (("Gate 3 — golden prompts.", False),)
    assert view.about == ((("What it asks, at length.", False),), (("A failure looks like ", False), ("!!!!", True), (".", False)))
    html = render_correctness_html(replace(rollback_run(), gates=(gate,)))
    about = html[html.index('<details class="about">'):]
    assert html.index("Gate 3 — golden prompts.") < html.index('<details class="about">')
    assert about.index("<summary>about this gate</summary>") < about.index("What it asks") < about.index("</details>")


def test_a_gate_stopped_before_it_ran_shows_its_skip_in_its_section() -> None:
    """Its skip is not under Failures (the earlier failure is), so its section shows the card
    itself rather than pointing to one that is not there."""
    stopped = _gate("numerics", 2, "Numerical consistency",
                    [_check("numerics", "not_run", Status.SKIP, "not run: gate 1 (startup) failed")], coverage=None)
    html = render_correctness_html(replace(rollback_run(), gates=(stopped,)))
    section = html[html.index('id="gate-numerics"'):]
    assert 'id="check-numerics.not_run"' in section and "shown under Failures above" not in section
