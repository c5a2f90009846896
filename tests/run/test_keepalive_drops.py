"""Whole runs (the correctness gates, the smoke policy) through real proxies that lose requests on kept-alive
connections (the race every uvicorn server has): a share both targets show alike never decides a
run — the client sends each lost request again on a fresh connection and counts it — and a
candidate that loses far more than the reference is not promoted (`<gate>.retry_excess`). The
performance gate's load generator re-sends its own lost requests (tests/perf/test_loadgen.py)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from keepalive_proxy import keepalive_proxy  # noqa: E402
from paths import GK_TINY, ROOT  # noqa: E402
from run_util import gk_run  # noqa: E402
from server_util import running_server  # noqa: E402

pytestmark = pytest.mark.slow


def _reconnected(summary: dict, side: str) -> int:
    return sum(r["reconnected"] for g in summary["gates"] for r in g.get("retries", ()) if r["role"].startswith(side))


def _run(tmp_path, ref_rate: float, cand_rate: float, *flags: str):
    """Two servers of one build (the bundled engine's optimized path serving the shipped gk-tiny: a
    clean upgrade), each behind its own proxy."""
    with running_server(GK_TINY, "--profile", "optimized") as ref, \
            running_server(GK_TINY, "--profile", "optimized") as cand, \
            keepalive_proxy(ref.url, ref_rate, seed=11) as ref_proxy, keepalive_proxy(cand.url, cand_rate, seed=12) as cand_proxy:
        out = gk_run(tmp_path, "--model", str(GK_TINY), "--reference", ref_proxy.url, "--candidate", cand_proxy.url,
                     *flags, timeout=1200)
    return out, ref_proxy, cand_proxy


def test_a_clean_pair_losing_two_percent_alike_promotes_with_the_drops_counted(tmp_path):
    # every correctness gate under the smoke policy: a verdict that does not depend on this machine's
    # speed, so the test needs no machine of its own (the performance gate's guardrails are advisory
    # there, but an advisory FAIL HOLDs: a burst of another test's load on the candidate's blocks
    # once made a 62% worse TTFT p95 at 4 pairs a side, in CI)
    out, ref_proxy, cand_proxy = _run(tmp_path, 0.02, 0.02, "--policy", str(ROOT / "gates" / "smoke.yaml"),
                                      "--gates", "startup,numerics,golden,longctx,shadow")
    print(f"\ndropped: reference {ref_proxy.dropped} of {ref_proxy.reused} kept-alive, candidate {cand_proxy.dropped} of "
          f"{cand_proxy.reused}")
    assert ref_proxy.dropped > 0 and cand_proxy.dropped > 0
    assert out.summary["verdict"] == "PROMOTE", out.summary["reasons"]  # never held or rolled back for a drop
    # every request the gates' client lost was sent again and counted, per target and gate, in summary.json
    for side, proxy in (("reference", ref_proxy), ("candidate", cand_proxy)):
        assert 0 < _reconnected(out.summary, side) <= proxy.dropped, (side, proxy.dropped, out.summary["gates"])
    # each gate where both sides sent requests compares their retries and finds them alike; a gate where one side
    # sent none through the counted client compares nothing
    excess = [c for g in out.summary["gates"] for c in g["checks"] if c["id"].endswith(".retry_excess")]
    compared = [c for c in excess if not (c["status"] == "SKIP" and c["reason"].startswith("not compared: "))]
    assert len(compared) >= 4 and all(c["status"] == "PASS" for c in compared), excess


def test_a_candidate_losing_ten_percent_is_not_promoted(tmp_path):
    # gate 5's replay, where the smoke policy sends the most requests through the counted client
    # (gates 3 and 4 as well took a minute more in CI for no claim of this test's)
    out, ref_proxy, cand_proxy = _run(tmp_path, 0.0, 0.10, "--policy", str(ROOT / "gates" / "smoke.yaml"),
                                      "--gates", "startup,shadow")
    assert ref_proxy.dropped == 0 and cand_proxy.dropped > 0
    assert out.summary["verdict"] != "PROMOTE", out.summary["reasons"]
    excess = [c for g in out.summary["gates"] for c in g["checks"] if c["id"].endswith(".retry_excess")]
    assert any(c["status"] == "FAIL" for c in excess), excess
    assert any(".retry_excess: FAIL (advisory)" in r for r in out.summary["reasons"]), out.summary["reasons"]
