"""Property tests: whatever text a model produces, every report format stays well-formed."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import replace

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from gatekeeper.report import render_correctness_html
from gatekeeper.report import render_junit
from gatekeeper.report.safe_text import md_cell
from gatekeeper.report.records import RecordWriter, read_records
from gatekeeper.report import render_summary_json
from gatekeeper.report.textdiff import text_pair, visible
from gatekeeper.report.run.files import write_reports
from gatekeeper.evidence import from_json
from report_runs import rollback_run

# any code point, surrogates included: model output arrives decoded with errors="surrogatepass" at worst
anything = st.text(st.characters(codec=None, categories=None), max_size=200)
RUN = rollback_run()


def _with_text(reason: str, candidate: str):  # type: ignore[no-untyped-def]
    gate = RUN.gates[2]
    check = replace(gate.checks[1], reason=reason, metrics={"got": candidate, "x": float("nan")},
                    evidence=(from_json("text_pair", candidate, {"reference": "ref", "candidate": candidate}),))
    return replace(RUN, gates=(replace(gate, checks=(check,)),), reasons=(reason,))


@settings(max_examples=60, deadline=None)
@given(reason=anything, candidate=anything)
def test_every_format_survives_any_text(reason: str, candidate: str) -> None:
    run = _with_text(reason, candidate)
    ET.fromstring(render_junit(run).encode("utf-8"))
    json.loads(render_summary_json(run).encode("utf-8"))
    html = render_correctness_html(run)
    assert "<script" not in html.lower().replace("&lt;script", "")


def test_surrogates_from_model_output_do_not_stop_the_reports(tmp_path: Path) -> None:
    half_emoji, pair = "cut \ud83d", "joined \ud83d\ude00"
    run = _with_text(half_emoji, pair)
    paths = write_reports(run, tmp_path)
    assert "cut \ufffd" in paths["summary_json"].read_text(encoding="utf-8")
    assert "joined \U0001f600" in paths["correctness_html"].read_text(encoding="utf-8")
    with RecordWriter(tmp_path / "records.jsonl") as records:
        records.write(run.gates[0].checks[0])
    assert next(read_records(tmp_path / "records.jsonl"))["reason"] == "cut \ufffd"


@given(anything)
def test_md_cell_is_one_line_without_markup(text: str) -> None:
    cell = md_cell(text)
    assert "\n" not in cell and "\r" not in cell
    assert "<" not in cell and ">" not in cell


@given(anything, anything)
def test_text_pair_splits_at_the_first_difference(a: str, b: str) -> None:
    pair = text_pair("t", {"reference": a, "candidate": b})
    if a == b:
        assert pair.identical
        return
    d = pair.divergence
    assert d is not None and a[:d] == b[:d]
    assert d == min(len(a), len(b)) or a[d] != b[d]
    if len(a) <= 2000 and len(b) <= 2000:
        assert pair.reference.prefix + pair.reference.tail == visible(a)
        assert pair.candidate.prefix + pair.candidate.tail == visible(b)
