"""`gatekeeper selftest`: the outcome rules, the coverage list, the page, and the quick subset end to end."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gatekeeper.engine.faults import FAULTS
from gatekeeper.report.selftest.data import CellOutcome, SelftestResult
from gatekeeper.report.selftest.view import selftest_html
from gatekeeper.results import Verdict
from gatekeeper.run_summary import SummaryInvalid, SummaryMissing, SummaryUnreadable
from gatekeeper.selftest.cells import FAULT_CELLS, SelftestCell, cells, uncovered
from gatekeeper.selftest.run import GATE_ORDER, _judge, _outcome
from paths import ROOT
from summary_files import check, run_of, write_summary


def test_outcomes_are_named_by_where_the_fault_was_caught():
    cell = SelftestCell("x", ("eos-ignored",), catch_at=("golden",))
    assert _outcome(cell, Verdict.ROLLBACK, "golden") == "caught at an intended gate"
    assert _outcome(cell, Verdict.ROLLBACK, "startup") == "caught earlier"
    assert _outcome(cell, Verdict.ROLLBACK, "performance") == "caught elsewhere"
    assert _outcome(cell, Verdict.PROMOTE, None) == "missed"
    assert _outcome(cell, Verdict.HOLD, "golden") == "not judged"  # a HOLD never counts as a catch
    assert _outcome(cell, None, "golden") == "not judged"  # nor does a run that left no summary that reads
    clean = SelftestCell("c")
    assert [_outcome(clean, v, None) for v in (*Verdict, None)] == ["clean", "inconclusive", "false alarm", "inconclusive"]


def test_a_cell_is_judged_from_its_summary_and_a_run_without_one_decided_nothing(tmp_path):
    cell = SelftestCell("x", ("eos-ignored",), catch_at=("golden",))
    checks = [check("startup.canary.candidate", "PASS"), check("golden.eos-stop", "FAIL", "no stop"),
              check("golden.json-1", "FAIL", "advisory", blocking=False)]
    write_summary(tmp_path / "run", run_of("ROLLBACK", checks))
    judged, why = _judge(cell, tmp_path / "run", 3.0, kept=True)
    assert why is None and (judged.verdict, judged.caught_at, judged.failing) == ("ROLLBACK", "golden", ("golden.eos-stop",))
    assert judged.outcome == "caught at an intended gate" and judged.seconds == 90.0  # a kept cell: its own run's time
    doc = json.loads((tmp_path / "run" / "summary.json").read_text())
    del doc["verdict"]  # a summary that states no verdict is no catch (it was read as the verdict "None")
    (tmp_path / "run" / "summary.json").write_text(json.dumps(doc))
    for run_dir, error in ((tmp_path / "run", SummaryInvalid), (tmp_path / "none", SummaryMissing), (None, SummaryMissing)):
        judged, why = _judge(cell, run_dir, 3.0, kept=False)
        assert isinstance(why, error) and (judged.verdict, judged.outcome, judged.caught_at) == ("HOLD", "not judged", None)
    (tmp_path / "run" / "summary.json").write_text("{")
    judged, why = _judge(SelftestCell("c"), tmp_path / "run", 3.0, kept=False)
    assert isinstance(why, SummaryUnreadable) and judged.outcome == "inconclusive" and "not JSON" in str(why)


def test_every_fault_is_covered_and_the_quick_subset_is_small():
    assert uncovered() == [] and {f.split("=")[0] for c in FAULT_CELLS for f in c.faults} == set(FAULTS)
    quick = cells(quick=True)
    assert 3 <= len(quick) <= 6 and any(c.clean for c in quick) and len(cells(quick=False)) >= len(FAULT_CELLS) + 10


def test_the_page_marks_where_each_fault_was_caught_and_shows_markup_as_text():
    caught = CellOutcome(cell="<b>norm</b>", faults=("x=<script>",), intended=("golden",), verdict=Verdict.ROLLBACK,
                         caught_at="startup", failing=("startup.a",), outcome="caught earlier", seconds=12.4, run_dir="/r/1")
    clean = CellOutcome(cell="clean", faults=(), intended=(), verdict=Verdict.PROMOTE, caught_at=None, failing=(),
                        outcome="clean", seconds=3.0, run_dir="/r/2", kept=True)
    r = SelftestResult(quick=True, wall_s=20.0, cells_s=15.4, faults=1, caught=1, caught_at_intended_gate=0, missed=(),
                       not_judged=(), clean_cells=1, false_alarms=(), not_covered=("<fault>",), ok=False, cells=(caught, clean))
    page = selftest_html(r, GATE_ORDER)
    assert "<script>" not in page and "<b>norm" not in page and "&lt;fault&gt;" in page
    assert "<h1>gatekeeper selftest (quick): NOT OK</h1>" in page and "<td>3 s (kept)</td>" in page
    row = page.split("&lt;b&gt;norm&lt;/b&gt;")[1].split("</tr>")[0]
    assert row.count("●") == 1 and row.count("○") == 1 and row.index("●") < row.index("○")  # caught at startup, meant for golden
    assert json.loads(json.dumps(r.to_json()))["cells"][0]["faults"] == ["x=<script>"]
    assert "<td>ROLLBACK</td>" in row and "Verdict." not in page and r.to_json()["cells"][0]["verdict"] == "ROLLBACK"


@pytest.mark.slow  # ~64 s: out of the default suite's 15 minutes (CI runs it)
def test_the_quick_selftest_catches_its_faults_at_their_gates(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "gatekeeper.cli", "selftest", "--quick", "--out", str(tmp_path)],
                          capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert "Traceback" not in proc.stderr, proc.stderr
    data = json.loads((tmp_path / "selftest.json").read_text())
    outcomes = {c["cell"]: (c["outcome"], c["caught_at"]) for c in data["cells"]}
    assert outcomes["fused-norm-dtype"] == ("caught at an intended gate", "startup"), outcomes
    assert outcomes["optional-import"][1] == "startup" and outcomes["clean-seed0"] == ("clean", None), outcomes
    assert outcomes["tool-parser-partial"] == ("caught at an intended gate", "golden"), outcomes
    assert outcomes["eos-ignored"][0] == "caught at an intended gate", outcomes  # the canary's answer runs on past OK
    assert data["ok"] and proc.returncode == 0 and data["false_alarms"] == [] and data["missed"] == []
    assert "selftest (quick)" in (tmp_path / "selftest.html").read_text()
    again = subprocess.run([sys.executable, "-m", "gatekeeper.cli", "selftest", "--quick", "--out", str(tmp_path)],
                           capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert again.stderr.count(": kept (") == len(data["cells"])  # resumable: nothing ran again
