"""The six scenarios a reviewer meets, from real runs of the shipped model, opened in headless
Chromium at 1280×900: who was compared (the identity line), the verdict, its reasons and the first
key chart (when the page has one) on the first screen of correctness.html and performance.html; the
first reason of a HOLD or ROLLBACK links to its check's evidence on the page; every gate's badge is
its status in summary.json ("not run" where it did not run), and a PROMOTE shows no gate FAIL or ERROR.

Clean (smoke policy, every gate), ROLLBACK at golden (streamed tool calls broken), ROLLBACK at
gate 5 (tools beyond the fourth dropped: only wide-menu tenants are hit; gates 1 and 5 only), ROLLBACK at performance
(each decode step twice as long: the performance gate's own test's run, tests/helpers/perf_runs.py), HOLD for an unusable reference (it
never answers), and a PROMOTE restricted by --gates. Slow: about four minutes of real runs. With
GATEKEEPER_SCREENSHOTS=DIR a PNG of every page is saved for a human to look at.
"""

from __future__ import annotations


import pytest

from perf_runs import SLOWED_RUN
from run_util import RunOutcome, gk_run
from server_util import free_port
from test_report_browser import FOLD, chromium_binary, probe
from paths import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.serial]  # the clean run PROMOTEs only with its performance gate decided: alone on the machine

SMOKE = ("--policy", str(ROOT / "gates/smoke.yaml"))
SCENARIOS = {
    "clean": ((*SMOKE,), "PROMOTE", None),
    "rollback-golden": ((*SMOKE, "--candidate-fault", "tool-parser-partial"), "ROLLBACK", "golden"),
    "rollback-shadow": ((*SMOKE, "--gates", "startup,shadow", "--candidate-fault", "tool-overflow=4"), "ROLLBACK", "shadow"),
    "rollback-performance": (SLOWED_RUN, "ROLLBACK", "performance"),
    "hold-reference": (("--gates", "startup,numerics,golden", "--reference", "http://127.0.0.1:{port}"), "HOLD", None),
    "partial-promote": ((*SMOKE, "--gates", "startup,numerics,golden"), "PROMOTE", None),
}


@pytest.fixture(scope="module")
def browser() -> str:
    binary = chromium_binary()
    if binary is None:
        pytest.skip("needs Chromium: `apt-get install -y chromium` (Debian) or set GATEKEEPER_CHROMIUM")
    return binary


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, shared_run) -> dict[str, RunOutcome]:
    """Each scenario's run: the session's shared run of the same arguments where another test
    makes it too, a run of its own for the unusable reference (a fresh port each time)."""
    done = {}
    for name, (args, _, _) in SCENARIOS.items():
        if any("{port}" in a for a in args):
            done[name] = gk_run(tmp_path_factory.mktemp(name), *(a.format(port=free_port()) for a in args), timeout=900)
        else:
            done[name] = shared_run(*args)
    return done


@pytest.mark.parametrize("page", ["correctness.html", "performance.html"])
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_a_real_runs_verdict_reasons_and_key_chart_are_on_the_first_screen(browser, runs, name, page, tmp_path):
    _, verdict, failing_gate = SCENARIOS[name]
    out = runs[name]
    assert out.summary is not None, out.stderr[-3000:]
    assert out.summary["verdict"] == verdict, out.summary["reasons"]
    if failing_gate:
        assert any(r.startswith(f"{failing_gate}.") for r in out.summary["reasons"]), out.summary["reasons"]
    target = out.run_dir / page
    renamed = target.with_name(f"{name}-{page}")  # the screenshot's name says the scenario
    renamed.write_bytes(target.read_bytes())
    seen = probe(browser, renamed, 1280, tmp_path)
    fold = seen["fold"]
    assert f"Verdict: {verdict}" in seen["text"] and fold["#verdict .big"]["bottom"] < FOLD
    reasons = fold.get("#reasons li") or fold.get("#verdict .status-line")
    assert reasons is not None and reasons["bottom"] < FOLD, f"{name} {page}: no reason on the first screen: {fold}"
    # who was compared, on the first screen
    assert seen["identity"] and "→ candidate" in seen["identity"] and fold["#identity"]["bottom"] < FOLD, seen["identity"]
    # the first reason of a run that did not PROMOTE leads to its evidence: a link whose target exists
    if verdict != "PROMOTE" and page == "correctness.html":
        assert seen["reasonLink"] and "#check-" in seen["reasonLink"], seen["reasonLink"]
        other, _, anchor = seen["reasonLink"].partition("#")
        if other:  # a performance check's reason links to the other page: its anchor is there
            assert f'id="{anchor}"' in (out.run_dir / other).read_text(), f"{name}: no {anchor} in {other}"
        else:
            assert seen["reasonTarget"] is True, f"{name}: the first reason's link {seen['reasonLink']} has no target"
    # no misleading roll-up: each gate's badge is its summary status, "not run" for one that did not run (left
    # out, or stopped by an earlier gate: no coverage); a PROMOTE shows no gate FAIL or ERROR
    if page == "correctness.html":
        statuses = {g["id"]: g["status"] if g["coverage"] is not None else "not run" for g in out.summary["gates"]}
        shown = {gate: badge for gate, badge in seen["gateBadges"].items() if gate in statuses}
        assert shown == {gate: statuses[gate] for gate in shown}, (shown, statuses)
        assert verdict != "PROMOTE" or not {"FAIL", "ERROR"} & set(shown.values()), shown
    if name == "partial-promote":
        assert "Verdict: PROMOTE (partial: 3 of 6 gates ran)" in seen["text"]
    if seen["keyCharts"]:
        chart = fold["figure.key-chart svg"]
        assert chart["top"] < FOLD and chart["height"] > 50, f"{name} {page}: first key chart below the fold: {fold}"
    else:  # a page without a chart says so on the first screen
        assert name == "hold-reference" or "#key-charts p.muted" in fold, f"{name} {page}: {fold}"
