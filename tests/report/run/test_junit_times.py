"""junit.xml's testcase times from a real run (the smoke policy's gates 1 to 3 on the bundled model,
the run the real-browser test's partial PROMOTE shares): no blocking check that did work reads
0.000 s. Checks decided from one shared batch of requests each carry the batch's time, not the
moment since the check recorded before them: gate 2's figures the scoring's, a golden case its
candidate request's, `golden.pass_rate` the whole gate's."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from paths import ROOT

pytest.importorskip("torch")

GATES_1_TO_3 = ("--policy", str(ROOT / "gates/smoke.yaml"), "--gates", "startup,numerics,golden")


def test_no_blocking_check_that_did_work_reads_zero_seconds(shared_run):
    out = shared_run(*GATES_1_TO_3)
    assert out.summary is not None and out.run_dir is not None, out.stderr[-3000:]
    checks = {c["id"]: c for g in out.summary["gates"] if g["id"] in ("numerics", "golden") for c in g["checks"]}
    worked = {i: c["duration_s"] for i, c in checks.items() if c["blocking"] and c["status"] != "SKIP"}
    times = {case.get("name"): case.get("time") for case in ET.parse(out.run_dir / "junit.xml").iter("testcase")}
    assert len(worked) > 20 and [i for i in worked if times[i] == "0.000"] == [], times

    scoring = worked.pop("numerics.scoring")
    figures = {i: t for i, t in worked.items() if i.startswith("numerics.") and i != "numerics.tokenization"}
    assert len(figures) == 8 and all(t >= scoring for t in figures.values()), (scoring, figures)

    pass_rate = worked.pop("golden.pass_rate")
    golden = {i: t for i, t in worked.items() if i.startswith("golden.")}
    answered = [json.loads(line)["answer"] for line in (out.run_dir / "answers" / "candidate.jsonl").read_text().splitlines()
                if json.loads(line)["gate"] == "golden"]
    fastest = min(a["e2e_s"] for a in answered if a.get("type") == "chat")
    assert golden and all(t >= fastest for t in golden.values()), (fastest, golden)  # each at least a request's time
    assert pass_rate >= max(golden.values()), (pass_rate, golden)
