"""correctness.html's cards and gates: a failing card shows its diff before its metrics; a gate's
long description folds under "about this gate"."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gatekeeper.report import render_correctness_html
from gatekeeper.report.viewmodel import gate_view
from gatekeeper.results import Status
from report_runs import _check, _gate, rollback_run
from report_runs_causes import same_cause_run


@pytest.fixture(scope="module")
def page() -> str:
    return render_correctness_html(same_cause_run())


def test_a_failing_card_shows_its_diff_before_its_metrics(page: str) -> None:
    card = page[page.index('id="check-golden.eos-1"'):page.index('id="check-golden.eos-2"')]
    assert "<summary>evidence and metrics</summary>" in card
    assert card.index("<h4>reference vs candidate</h4>") < card.index('class="data metrics"')


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
