"""The performance gate's findings (gates/performance/checks.py, gates/finding.py): what the gate records
is each finding's `metrics()`, read back by `of(check)` from a recorded check or a stored
summary.json, and performance.html's table reads the findings, not metric keys."""

from __future__ import annotations

from types import SimpleNamespace

from gatekeeper.gates.performance import checks
from gatekeeper.gates.performance.checks import (CapacityFinding, ComparisonFinding, HistoryFinding, MeasurementFinding,
                                                 PrimaryFinding, PrimaryNoise, QuietWaits, SloLimits)
from gatekeeper.report.performance.gate_table import baseline_of, seed_table
from findings_util import stored
from gatekeeper.results import CheckResult, Status

COMPARED = ComparisonFinding(level=4, metric="tpot_p50_s", pairs=6, baseline=0.004, candidate=0.0044, ratio=1.1,
                             ci=(1.05, 1.15), confidence=0.9, noise_ratio=1.0, noise_ci=(0.98, 1.02), budget=0.15,
                             threshold=0.15, p_worse=0.01, p_worse_holm=0.02, worse_by=0.1,
                             baseline_blocks=(0.004, None), candidate_blocks=(0.0044, None))


def check(check_id: str, metrics: dict[str, object], status: Status = Status.PASS) -> CheckResult:
    return CheckResult(id=check_id, gate=checks.GATE, status=status, blocking=True, reason="", metrics=dict(metrics))



def test_a_finding_reads_back_what_it_wrote_in_memory_and_from_json() -> None:
    findings = [COMPARED, ComparisonFinding(level=1, metric="ttft_p95_s"),
                PrimaryFinding(metric="decode_s_per_token", level=1, rounds=3, ratio=1.02, ci=(0.99, 1.05),
                               boundaries=(-2.9, 2.9), launched_first=("baseline", "candidate", "baseline"),
                               noise=PrimaryNoise(q=1.0, df=2, p=0.6, tau_measured=0.02, tau_assumed=0.025)),
                MeasurementFinding(baseline="the reference", levels=(1, 4), pairs={"c1": 6, "c4": 6},
                                   quiet_waits=QuietWaits(blocks=2, median_s=0.3, total_s=0.7, not_quiet=0),
                                   client_paced_pairs=0, unquiet_pairs=0),
                HistoryFinding(path="h.jsonl", runs=9, change_points=(("c1.tpot_p50_s", "+12% from run 5"),))]
    for finding in findings:
        written = finding.metrics()
        assert type(finding).from_metrics(written) == finding
        assert type(finding).from_metrics(stored(written)) == finding


def test_tuples_are_written_as_lists_but_an_interval_stays_a_pair() -> None:
    written = COMPARED.metrics()
    assert written["ci"] == (1.05, 1.15) and written["baseline_blocks"] == [0.004, None]
    assert list(written)[:4] == ["level", "metric", "pairs", "baseline"]  # field order is key order


def test_a_comparison_not_made_writes_its_level_and_metric_only() -> None:
    assert ComparisonFinding(level=4, metric="tpot_p50_s").metrics() == {"level": 4, "metric": "tpot_p50_s"}
    assert PrimaryFinding(metric="decode_s_per_token").metrics() == {"metric": "decode_s_per_token"}


def test_optional_keys_are_left_out_while_none() -> None:
    assert HistoryFinding(path="h.jsonl").metrics() == {"path": "h.jsonl"}
    assert "quiet_waits" not in MeasurementFinding(baseline="b").metrics()
    assert MeasurementFinding.from_metrics({}).baseline == ""  # a key the metrics lack: the field's default


def test_the_performance_table_reads_the_findings_of_recorded_and_stored_checks() -> None:
    capacity = CapacityFinding(slo=SloLimits(ttft_p95_s=2.0), knee={"baseline": "4", "candidate": "1"},
                               cost_per_1000={"baseline": 0.5, "candidate": None}, price_per_accelerator_hour=2.0)
    measured = MeasurementFinding(baseline="the reference", figures={"c4": {"baseline": {"requests_per_s": 2.0},
                                                                            "candidate": {"requests_per_s": 1.0}}})
    run = SimpleNamespace(targets=())
    for load in (dict, stored):
        gate = SimpleNamespace(checks=(check(checks.MEASUREMENT, load(measured.metrics())),
                                       check(checks.comparison(4, "tpot_p50_s"), load(COMPARED.metrics()), Status.FAIL),
                                       check(checks.CAPACITY, load(capacity.metrics()), Status.WARN)))
        rows = {r.dimension + " " + r.metric: r for r in seed_table(gate, run)}  # type: ignore[arg-type]
        assert baseline_of(gate) == "the reference"  # type: ignore[arg-type]
        tpot = rows["Latency TPOT p50 at concurrency 4"]
        assert (tpot.baseline, tpot.candidate, tpot.ratio, tpot.status) == ("4.00 ms", "4.40 ms", "1.100 [1.050, 1.150]", "FAIL")
        assert rows["Throughput requests/s at concurrency 4"].ratio == "0.500"
        knee = next(r for r in rows.values() if r.dimension == "Capacity")
        assert "TTFT p95 ≤ 2000 ms" in knee.metric and (knee.baseline, knee.candidate) == ("concurrency 4", "concurrency 1")
        cost = next(r for r in rows.values() if r.dimension == "Cost")
        assert "price 2.0 per accelerator-hour × 1" in cost.metric and cost.candidate == "–"
