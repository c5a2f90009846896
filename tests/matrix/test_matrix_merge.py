"""Merging cell runs: the combining rule, expectations, a cell that left no summary, the
localisation sentence, JUnit with one suite per cell, the path records
(docs/bug-classes.md#path-record), and a page that shows markup in a cell's name or reason as text.

The cell runs here are written by hand in the shapes `gatekeeper run --matrix --cell` writes
(cell.json, summary.json by the project's own renderer: tests/helpers/summary_files.py); a real
two-cell run and merge is in tests/matrix/test_matrix_cli.py."""

from __future__ import annotations

import itertools
import json
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

from gatekeeper.errors import ConfigError
from gatekeeper.matrix.merge import merge
from gatekeeper.run_summary import read_summary
from summary_files import check, run_of, target, write_summary


def _cell(root: Path, axes: dict, verdict: str | None, expected: str | None = None) -> Path:
    cid = ",".join(f"{k}={v}" for k, v in axes.items())
    d = root / cid.replace(",", "_")
    d.mkdir(parents=True)
    (d / "cell.json").write_text(json.dumps({"format": "gatekeeper.cell/1", "matrix": {"name": "m"}, "cell": cid,
                                             "axes": axes, "declared": {"dtype": axes["dtype"]}, "expected": expected}))
    if verdict is not None:
        failed = verdict == "ROLLBACK"
        checks = [check("startup.canary.candidate", "PASS", "OK"),
                  check("golden.json-enforced-1", "FAIL" if failed else "PASS", "regression" if failed else "ok",
                        family="json_enforced")]
        observed = {"dtype": axes["dtype"], "tp": str(axes["tp"])}
        write_summary(d, run_of(verdict, checks, (target("reference"), target("candidate", observed=observed))))
    return d


def _grid(root: Path, expect: bool = False) -> None:
    for dtype, tp, fused in itertools.product(("float32", "bfloat16"), (1, 2), ("off", "on")):
        bad = dtype == "bfloat16" and tp > 1 and fused == "on"
        verdict = "ROLLBACK" if bad else "PROMOTE"
        _cell(root, {"dtype": dtype, "tp": tp, "fused_norm": fused}, verdict, verdict if expect else None)


def test_the_worst_cell_decides_and_the_failing_path_is_localised(tmp_path: Path) -> None:
    _grid(tmp_path / "runs")
    verdict, out = merge([tmp_path / "runs"], tmp_path / "merged")
    data = json.loads((out / "merged.json").read_text())
    assert verdict == data["verdict"] == "ROLLBACK" and data["exit_code"] == 1
    assert data["localisation"].startswith("fails when dtype=bfloat16 and tp>1 and fused_norm=on; dtype=float32 passes")
    assert "tp=1 passes" in data["localisation"] and "fused_norm=off passes" in data["localisation"]
    md = (out / "summary.md").read_text()
    assert "**ROLLBACK**" in md and "| `dtype=bfloat16,tp=2,fused_norm=on` | ROLLBACK |" in md
    suites = ET.parse(out / "junit.xml").getroot().findall("testsuite")
    assert len(suites) == 8 and sum(int(s.get("failures")) for s in suites) == 1
    record = yaml.safe_load((out / "records" / "dtype=bfloat16_tp=2_fused_norm=on.yaml").read_text())
    assert record["dtypes"]["activation"] == "bfloat16" and record["parallelism"] == {"tp": "2"}
    assert record["result"] == {"deterministic_probe": "pass", "json_probe": "fail", "tool_probe": "not run"}
    assert "Localisation" in (out / "merged.html").read_text()


def test_a_probe_whose_checks_all_skipped_is_not_a_pass(tmp_path: Path) -> None:
    from gatekeeper.matrix.record import path_record
    write_summary(tmp_path, run_of("HOLD", [check("golden.json-1", "SKIP", family="json")]))
    assert path_record(read_summary(tmp_path), {"axes": {}})["result"]["json_probe"] == "not judged"


def test_a_matrix_that_behaves_as_expected_promotes_and_one_that_does_not_holds(tmp_path: Path) -> None:
    _grid(tmp_path / "a", expect=True)
    assert merge([tmp_path / "a"], tmp_path / "ma")[0] == "ROLLBACK"  # expected, but a ROLLBACK is still a ROLLBACK
    _cell(tmp_path / "b", {"dtype": "float32", "tp": 1, "fused_norm": "on"}, "PROMOTE", "ROLLBACK")
    verdict, out = merge([tmp_path / "b"], tmp_path / "mb")
    assert verdict == "HOLD" and "expected ROLLBACK" in " ".join(json.loads((out / "merged.json").read_text())["reasons"])


def test_a_cell_whose_run_died_holds_and_is_left_out_of_the_localisation(tmp_path: Path) -> None:
    _cell(tmp_path / "r", {"dtype": "float32", "tp": 1, "fused_norm": "on"}, "PROMOTE")
    _cell(tmp_path / "r", {"dtype": "bfloat16", "tp": 1, "fused_norm": "on"}, None)
    verdict, out = merge([tmp_path / "r"], tmp_path / "m")
    data = json.loads((out / "merged.json").read_text())
    assert verdict == "HOLD" and data["localisation"] == "no cell failed"
    dead = next(c for c in data["cells"] if c["verdict"] == "HOLD")
    assert dead["note"] == "the run left no readable summary.json (it died or was cut short): HOLD"


@pytest.mark.parametrize("spoil, says", [
    (lambda doc: doc.pop("verdict"), "not a gatekeeper summary (at top level: 'verdict' is a required property)"),
    (lambda doc: doc.update(verdict="MAYBE"), "not a gatekeeper summary (at verdict: 'MAYBE' is not one of"),
    (None, "not JSON ("),
], ids=["no-verdict", "unknown-verdict", "corrupt"])
def test_a_summary_that_does_not_read_holds_its_cell_and_says_why(tmp_path: Path, spoil, says) -> None:
    """No verdict is read from a summary that does not state one: the cell HOLDs, and its note
    names what is wrong with the file (before, a summary without a verdict HOLDed silently)."""
    _cell(tmp_path / "r", {"dtype": "float32", "tp": 1, "fused_norm": "on"}, "PROMOTE")
    d = _cell(tmp_path / "r", {"dtype": "bfloat16", "tp": 1, "fused_norm": "on"}, "ROLLBACK")
    if spoil is None:
        (d / "summary.json").write_text('{"verdict": "ROLLB')
    else:
        doc = json.loads((d / "summary.json").read_text())
        spoil(doc)
        (d / "summary.json").write_text(json.dumps(doc))
    verdict, out = merge([tmp_path / "r"], tmp_path / "m")
    cell = next(c for c in json.loads((out / "merged.json").read_text())["cells"] if c["cell"].startswith("dtype=bf"))
    assert verdict == "HOLD" and cell["verdict"] == "HOLD" and cell["gates"] == {} and cell["failing"] == []
    assert cell["note"].startswith("the run left no readable summary.json (") and says in cell["note"], cell["note"]


def test_bad_inputs_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such directory"):
        merge([tmp_path / "nope"], tmp_path / "m")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="no cell runs"):
        merge([tmp_path / "empty"], tmp_path / "m")
    _cell(tmp_path / "x" / "1", {"dtype": "float32", "tp": 1, "fused_norm": "on"}, "PROMOTE")
    _cell(tmp_path / "x" / "2", {"dtype": "float32", "tp": 1, "fused_norm": "on"}, "PROMOTE")
    with pytest.raises(ConfigError, match="more than once"):
        merge([tmp_path / "x"], tmp_path / "m")


class _Tags(HTMLParser):
    """The start tags of a page and its text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append(tag)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_markup_in_a_cell_name_or_reason_shows_as_text(tmp_path: Path) -> None:
    hostile = "<script>alert('x')</script>"
    d = _cell(tmp_path / "r", {"dtype": hostile, "tp": 1, "fused_norm": 'a"b'}, "ROLLBACK")
    summary = json.loads((d / "summary.json").read_text())
    summary["gates"][1]["checks"][0]["reason"] = f'{hostile} <img src=x onerror="alert(1)">'
    (d / "summary.json").write_text(json.dumps(summary))  # as a run whose model wrote it would
    _, out = merge([tmp_path / "r"], tmp_path / "m")
    page = (out / "merged.html").read_text()
    parsed = _Tags()
    parsed.feed(page)
    assert "script" not in parsed.tags and "img" not in parsed.tags and "<script>" not in page
    text = "".join(parsed.text)
    assert f"dtype={hostile},tp=1,fused_norm=a\"b" in text  # the cell's name, in the table, as text
    assert f'golden.json-enforced-1: FAIL — {hostile} <img src=x onerror="alert(1)">' in text
