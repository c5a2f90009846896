"""Open the HTML reports in a real headless Chromium and check what a reader sees.

The test copies each page, appends a small probe script (the shipped reports contain no script at
all), and loads it with `--dump-dom`. The probe measures the laid-out page — the document's scroll
width against the viewport, the visible text (`innerText`, which leaves out anything hidden), the
<mark>s and whether they have a size on screen, and where the verdict, its reasons, the page's table
(docs/bug-classes.md#report-tables) and the first key chart are (`getBoundingClientRect`) — and
writes the result as JSON into the DOM, which the test parses. At 1280×900 the verdict, the reasons
and the first key chart of every page must be on the first screen, the chart of a check that went
against the run first. Needs Debian's `chromium` (apt-get install chromium); skipped with a reason
when it is missing. Set GATEKEEPER_SCREENSHOTS=DIR to also save a PNG of every page and width for a
human to look at.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from gatekeeper.report.run.files import write_reports
from report_runs import XSS, hold_run, rollback_run
from report_runs_causes import same_cause_run
from report_runs_charts import partial_promote_run, perf_rollback_run, promote_full_run, shadow_rollback_run

WIDTHS = (1280, 720, 500)  # headless Chromium will not go narrower than 500 px
FOLD = 900  # the first screen of a 1280×900 window
FITS_WITHOUT_INNER_SCROLL = 720  # from this width up, every table and <pre> fits as well
PROBE = """
<script>
(function () {
  var d = document.documentElement, w = window.innerWidth;
  var wide = [];
  document.querySelectorAll("body *").forEach(function (el) {
    var r = el.getBoundingClientRect();
    if (r.right > w + 1 && wide.length < 5) wide.push(el.tagName + "." + el.className);
  });
  var marks = Array.prototype.map.call(document.querySelectorAll("mark"), function (m) {
    var r = m.getBoundingClientRect();
    return {text: m.textContent, visible: r.width > 0 && r.height > 0};
  });
  var scrolled = Array.prototype.filter.call(document.querySelectorAll(".tw, pre"), function (el) {
    return el.scrollWidth > el.clientWidth + 1;
  }).map(function (el) { return el.tagName + "." + el.className + ": " + el.textContent.slice(0, 40); });
  var fold = {};
  ["#verdict .big", "#reasons li", "#verdict .status-line", "#seed-table, #perf-table", "#key-charts h2",
   "#key-charts p.muted", "figure.key-chart svg", "#identity"].forEach(function (sel) {
    var el = document.querySelector(sel);
    if (el) { var r = el.getBoundingClientRect(); fold[sel] = {top: r.top, bottom: r.bottom, height: r.height}; }
  });
  var first = document.querySelector("figure.key-chart figcaption a");
  var link = document.querySelector("#reasons li a"), href = link ? link.getAttribute("href") : null;
  var here = href && href.indexOf("#") >= 0 && (href.charAt(0) === "#" || location.pathname.endsWith(href.split("#")[0]));
  var badges = {};
  document.querySelectorAll('section.gate[id^="gate-"] > header .badge').forEach(function (b) {
    badges[b.closest("section").id.slice(5)] = b.textContent.trim();
  });
  var identity = document.getElementById("identity");
  var out = {scrollWidth: d.scrollWidth, innerWidth: w, wide: wide, marks: marks, scrolled: scrolled,
             text: document.body.innerText, sections: document.querySelectorAll('section.gate[id^="gate-"]').length,
             scripts: document.scripts.length, fold: fold, firstChart: first ? first.textContent : null,
             keyCharts: document.querySelectorAll("figure.key-chart").length,
             reasonLink: href, reasonTarget: here ? !!document.getElementById(href.split("#")[1]) : null,
             gateBadges: badges, identity: identity ? identity.textContent : null};
  var pre = document.createElement("pre");
  pre.id = "__probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
"""


def chromium_binary() -> str | None:
    """The Chromium to use: $GATEKEEPER_CHROMIUM, else `chromium` or `chromium-browser` on PATH."""
    return (
        os.environ.get("GATEKEEPER_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    )


def chromium_args(binary: str, profile: Path, width: int) -> list[str]:
    return [
        binary,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        f"--window-size={width},900",
    ]


@pytest.fixture(scope="module")
def chromium() -> str:
    binary = chromium_binary()
    if binary is None:
        pytest.skip(
            "headless-browser test needs Chromium: `apt-get install -y chromium` (Debian) or set GATEKEEPER_CHROMIUM"
        )
    return binary


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("reports")
    paths = write_reports(rollback_run(), out / "rollback")
    paths["hold_correctness"] = write_reports(hold_run(), out / "hold")["correctness_html"]
    return paths


def probe(chromium: str, page: Path, width: int, tmp_path: Path) -> dict[str, Any]:
    """Load `page` at `width` CSS pixels with the probe appended; return what it measured."""
    source = page.read_text(encoding="utf-8")
    probed = page.with_name(f"probe-{width}-{page.name}")
    probed.write_text(source.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    args = chromium_args(chromium, tmp_path / f"profile-{width}", width)
    done = subprocess.run(args + ["--dump-dom", probed.as_uri()], capture_output=True, text=True, timeout=120)
    match = re.search(r'<pre id="__probe">(.*?)</pre>', done.stdout, re.S)
    assert match, f"probe did not run (exit {done.returncode}): {done.stderr[-2000:]}"
    shots = os.environ.get("GATEKEEPER_SCREENSHOTS")
    if shots:
        Path(shots).mkdir(parents=True, exist_ok=True)
        png = Path(shots) / f"{page.parent.name}-{page.stem}-{width}.png"
        subprocess.run(args + [f"--screenshot={png}", page.as_uri()], capture_output=True, timeout=120)
    return json.loads(html.unescape(match.group(1)))


@pytest.mark.parametrize("width", WIDTHS)
def test_correctness_page_as_a_reader_sees_it(
    chromium: str, reports: dict[str, Path], width: int, tmp_path: Path
) -> None:
    seen = probe(chromium, reports["correctness_html"], width, tmp_path)
    assert seen["scrollWidth"] <= seen["innerWidth"], f"page scrolls sideways at {width}px: {seen['wide']}"
    if width >= FITS_WITHOUT_INNER_SCROLL:
        assert seen["scrolled"] == [], f"boxes scroll sideways at {width}px"
    text = seen["text"]
    assert "Verdict: ROLLBACK" in text
    startup = text.index("1. Startup")  # the table of contents, then the gates
    assert text.index("Verdict: ROLLBACK") < text.index("Key charts") < text.index("Failures") < startup
    assert startup < text.index("2. Numerical consistency", startup)
    assert "max |Δlogprob| 2.5 > tolerance 0.05" in text
    assert XSS in text  # shown to the reader as text, never run
    assert seen["scripts"] == 1  # only the probe: the model's <script> is not an element
    marks = {m["text"]: m["visible"] for m in seen["marks"]}
    assert marks.get("!!!!!!!!") is True and marks.get("Paris.") is True
    assert seen["sections"] == 3


@pytest.mark.parametrize("width", WIDTHS)
def test_performance_page_as_a_reader_sees_it(
    chromium: str, reports: dict[str, Path], width: int, tmp_path: Path
) -> None:
    seen = probe(chromium, reports["performance_html"], width, tmp_path)
    assert seen["scrollWidth"] <= seen["innerWidth"], f"page scrolls sideways at {width}px: {seen['wide']}"
    if width >= FITS_WITHOUT_INNER_SCROLL:
        assert seen["scrolled"] == [], f"boxes scroll sideways at {width}px"
    text = seen["text"]
    assert "Verdict: ROLLBACK" in text
    assert "Candidate figures are not meaningful" in text
    assert "TTFT p50" in text and "end-to-end latency p95" in text


def test_page_without_timings_or_evidence(chromium: str, reports: dict[str, Path], tmp_path: Path) -> None:
    seen = probe(chromium, reports["hold_correctness"], 720, tmp_path)
    assert seen["scrollWidth"] <= seen["innerWidth"]
    assert "Verdict: HOLD" in seen["text"] and "connection refused" in seen["text"]


# run -> (first key chart on correctness.html, on performance.html): the check it belongs to; "" for the
# latency histograms performance.html shows when its gate drew nothing; None: the page has no key chart
FIRST_KEY_CHART = {
    "rollback": ("numerics.logprob_delta", ""),
    "hold": (None, None),  # no request was timed
    "promote_full": ("numerics.max_logprob_delta", "performance.c4.output_tokens_per_s"),
    "shadow_rollback": ("shadow.stage.quarter", ""),
    "perf_rollback": ("numerics.max_logprob_delta", "performance.c4.output_tokens_per_s"),
    "partial_promote": ("golden.pass_rate", ""),
}
RUNS = {"rollback": rollback_run, "hold": hold_run, "promote_full": promote_full_run, "shadow_rollback": shadow_rollback_run,
        "perf_rollback": perf_rollback_run, "partial_promote": partial_promote_run}


@pytest.fixture(scope="module")
def every_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Path]]:
    out = tmp_path_factory.mktemp("runs")
    return {name: write_reports(make(), out / name) for name, make in RUNS.items()}


@pytest.mark.parametrize("page", ["correctness_html", "performance_html"])
@pytest.mark.parametrize("run", sorted(FIRST_KEY_CHART))
def test_verdict_reasons_and_first_key_chart_are_above_the_fold(
    chromium: str, every_run: dict[str, dict[str, Path]], run: str, page: str, tmp_path: Path
) -> None:
    seen = probe(chromium, every_run[run][page], 1280, tmp_path)
    fold = seen["fold"]
    assert fold["#verdict .big"]["bottom"] < FOLD
    reasons = fold.get("#reasons li") or fold.get("#verdict .status-line")  # a gate not run has a status line only
    assert reasons is not None and reasons["bottom"] < FOLD, f"{run} {page}: no reason on the first screen: {fold}"
    if page == "performance_html":
        assert "performance gate:" in seen["text"]  # its own outcome, not a pointer to the other page
    else:
        assert fold["#seed-table, #perf-table"]["top"] < fold["#key-charts h2"]["top"]
    expected = FIRST_KEY_CHART[run][page == "performance_html"]
    assert seen["firstChart"] == (expected or None)
    if expected is None:
        assert seen["keyCharts"] == 0
        if "#key-charts h2" in fold:  # the section says there is none, on the first screen
            assert fold["#key-charts p.muted"]["bottom"] < FOLD
    else:
        chart = fold["figure.key-chart svg"]
        assert chart["top"] < FOLD and chart["height"] > 50, f"{run} {page}: first key chart below the fold: {fold}"


def test_a_folded_check_opens_when_its_link_is_followed(chromium: str, tmp_path: Path) -> None:
    """A check folded in a failures card keeps its anchor: following a link to it opens the fold
    (the browser opens a <details> around a fragment's target; no script), and the page with its
    cards does not scroll sideways."""
    page = write_reports(same_cause_run(), tmp_path / "causes")["correctness_html"]
    args = chromium_args(chromium, tmp_path / "profile", 1280)

    def fold(url: str) -> str:
        dom = subprocess.run(args + ["--dump-dom", url], capture_output=True, text=True, timeout=120).stdout
        card = dom[dom.index('id="cause-golden.eos-1"'):]
        return re.search(r'<details class="rest"[^>]*>', card).group(0)  # type: ignore[union-attr]

    assert "open" not in fold(page.as_uri())
    assert "open" in fold(page.as_uri() + "#check-golden.eos-4")
    for width in (1280, 500):
        seen = probe(chromium, page, width, tmp_path)
        assert seen["scrollWidth"] <= seen["innerWidth"], f"page scrolls sideways at {width}px: {seen['wide']}"
        assert "5 checks, one cause" in seen["text"] and "golden.eos-4" not in seen["text"]  # folded away
