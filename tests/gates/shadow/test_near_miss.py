"""Near misses: a sequential test past half its threshold on a log scale, or an excess beyond the
twin's noise but below materiality, is named beside a PROMOTE; one far from firing, or one that
fired, is not."""

from __future__ import annotations

from gatekeeper.gates.shadow.near_miss import near_misses, reason
from gatekeeper.results import CheckResult, GateResult, Status, Verdict
from gatekeeper.traffic.analysis import MetricResult, SliceResult
from gatekeeper.verdict import decide

ALPHA = 0.0025  # fires at e ≥ 400; half of it on a log scale is 20


def _metric(name: str, e: float | None, label: str = "Pass", fired_at: int | None = None, critical: bool = True) -> MetricResult:
    return MetricResult(name=name, critical=critical, label=label, candidate_rate=0.045, twin_rate=0.0, eligible=200, p_value=0.01,
                        e_value=e, effect=0.045, fired_at=fired_at, upper=0.06, materiality=0.03, counts=(9, 0, 191),
                        alpha=ALPHA if critical else None)


def _slice(key: str, *metrics: MetricResult) -> SliceResult:
    return SliceResult(key, 200, 200, {}, metrics, 100.0)


def test_past_half_the_threshold_or_beyond_the_noise_is_a_near_miss():
    assert _metric("disagreement", 20.0).near_miss and not _metric("disagreement", 19.9).near_miss
    assert _metric("json_parse", 2.0, label="Below materiality").near_miss
    assert not _metric("disagreement", 500.0, label="Fired", fired_at=120).near_miss
    assert not _metric("finish_reason", None, critical=False).near_miss
    misses = near_misses([_slice("all", _metric("disagreement", 3.0)),
                          _slice("tenant=support", _metric("disagreement", 31.0), _metric("json_parse", 2.0, label="Immaterial"))])
    assert [(n.slice, n.metric.name) for n in misses] == [("tenant=support", "disagreement"), ("tenant=support", "json_parse")]
    assert reason(misses) == ("2 sequential tests passed close to firing: disagreement in tenant=support (e = 31.0, fires at "
                              "400; candidate 4.5% vs twin 0.0%); json_parse in tenant=support (beyond the twin's noise, "
                              "below materiality; candidate 4.5% vs twin 0.0%)")


def test_a_promote_lists_its_near_misses_after_what_it_rests_on():
    passed = CheckResult(id="golden.a", gate="golden", status=Status.PASS, blocking=True, reason="same")
    miss = CheckResult(id="shadow.near_miss", gate="shadow", status=Status.WARN, blocking=False,
                       reason="1 sequential test passed close to firing: …", near_miss=True)
    verdict, reasons = decide([GateResult(id="golden", stage=3, title="", description="", status=Status.PASS, checks=(passed,)),
                               GateResult(id="shadow", stage=5, title="", description="", status=Status.WARN, checks=(miss,))])
    assert verdict is Verdict.PROMOTE
    assert reasons == ["all 1 blocking checks passed; 1 WARN (2 checks)",
                       "near miss: shadow.near_miss: WARN (advisory) — 1 sequential test passed close to firing: …"]
