"""The performance gate: its decision rule in simulation, and real runs on the bundled engines.

The statistics are checked where their error rates can be counted (simulated block pairs with
known noise); the gate itself runs against real servers: a slowed-down candidate is rolled back
on its own evidence, a candidate that failed correctness is not measured, and a baseline that
cannot be had is refused at plan time.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from gatekeeper.config.settings import SettingError
from gatekeeper.errors import ConfigError
from gatekeeper.gates.performance.baseline import choose
from gatekeeper.gates.performance.gate import judge, regressed
from gatekeeper.perf.measure import LevelBlocks
from gatekeeper.gates.performance.settings import PerformanceSettings
from gatekeeper.perf.compare import NOISE_CAP, Budget, compare
from gatekeeper.targets.interface import TargetSpec
from perf_runs import SLOWED_RUN, SMALL_POLICY
from run_util import gk_run

SMALL = SMALL_POLICY.read_text()


SIGMA, TAU = 0.08, 0.025  # block-pair noise and launch-to-launch spread measured on this 2-core VM (docs/performance.md)


def _level(rng: random.Random, pairs: int, shift: float, cv: float, drift: float = 0.0, tau: float = 0.0,
           launches: int = 1) -> LevelBlocks:
    """Simulated blocks: throughput and TPOT per side with log-normal noise `cv` per block, the
    candidate `shift` slower, a machine drift of `drift` per block that hits both sides, and each
    side's `launches` processes offset by N(0, tau) (the pairs split between them)."""
    lv = LevelBlocks(4)
    t = 0
    offsets = [{side: rng.gauss(0, tau) for side in ("baseline", "candidate")} for _ in range(launches)]
    for i in range(pairs):
        launch = offsets[min(i * launches // pairs, launches - 1)]
        for side in (("baseline", "candidate") if i % 2 == 0 else ("candidate", "baseline")):
            slow = (1 + shift if side == "candidate" else 1.0) * math.exp(drift * t + rng.gauss(0, cv) + launch[side])
            t += 1
            lv.figures[side].append({"output_tokens_per_s": 1000 / slow, "tpot_p50_s": 0.004 * slow,
                                     "ttft_p95_s": 0.02 * math.exp(rng.gauss(0, 2 * cv))})
    return lv


def _fails(lv: LevelBlocks, s: PerformanceSettings, launches: int = 1) -> bool:
    return any(regressed(c, p, s.alpha) for c, p in judge([lv], s, launches) if c.family == "guardrail")


def test_false_fail_rate_is_at_most_alpha_with_the_noise_measured_here():
    """Null: the candidate is the baseline, with this machine's noise: σ 8% per block pair, two
    launches per side each off by τ = 2.5%, a drifting machine. Over 2000 simulated runs of 24
    pairs the gate FAILs at most at its alpha (plus Monte Carlo slack)."""
    s = PerformanceSettings(pairs=24, levels=[4])
    rng = random.Random(7)
    fails = sum(_fails(_level(rng, 24, 0.0, SIGMA / math.sqrt(2), 0.002, TAU, 2), s, 2) for _ in range(2000))
    assert fails / 2000 <= s.alpha + 0.005, fails


def test_leaving_the_launch_spread_out_of_the_error_gives_false_fails():
    """The reason τ is in the standard error: the same clean runs judged as if each process were
    its build (launch_spread 0) and with 2% budgets (docs/bug-classes.md#patch-cost) FAIL far more
    often than alpha."""
    s = PerformanceSettings(pairs=24, levels=[4], launch_spread=0.0, throughput_budget=0.02, tpot_budget=0.02)
    rng = random.Random(7)
    fails = sum(_fails(_level(rng, 24, 0.0, SIGMA / math.sqrt(2), 0.0, TAU, 1), s, 1) for _ in range(1000))
    assert fails / 1000 > 5 * s.alpha, fails


def test_a_slowdown_beyond_the_budget_fails_with_the_noise_measured_here():
    """Power: a 23% slowdown (docs/bug-classes.md#decode-regression) with σ 8% and τ 2.5% FAILs in
    ≥ 95% of runs; one well within the 15% budget (5%) FAILs no more often than alpha allows."""
    s = PerformanceSettings(pairs=24, levels=[4])
    rng = random.Random(11)
    caught = sum(_fails(_level(rng, 24, 0.23, SIGMA / math.sqrt(2), 0.0, TAU, 2), s, 2) for _ in range(500))
    assert caught / 500 >= 0.95, caught
    within = sum(_fails(_level(rng, 24, 0.05, SIGMA / math.sqrt(2), 0.0, TAU, 2), s, 2) for _ in range(1000))
    assert within / 1000 <= 2 * s.alpha, within


def test_a_clean_run_is_decided_good_in_most_runs_with_the_default_design():
    """Three outcomes: a clean candidate under the defaults (24 pairs, two launches, budget 15%,
    90% interval) is decided good — every primary check's interval within the budget — in ≥ 90%
    of runs; the rest are undecided (HOLD), never a FAIL."""
    s = PerformanceSettings(pairs=24, levels=[4])
    rng = random.Random(5)
    decided = 0
    for _ in range(500):
        judged = [c for c, _ in judge([_level(rng, 24, 0.0, SIGMA / math.sqrt(2), 0.0, TAU, 2)], s, 2)
                  if c.family == "guardrail"]
        decided += all(c.excluded() for c in judged)
    assert decided / 500 >= 0.90, decided


def test_within_budget_is_not_a_failure_even_when_significant():
    """A 1% slowdown measured precisely is significant but within a 2% budget: never FAIL."""
    s = PerformanceSettings(pairs=8, levels=[4], launch_spread=0.0, throughput_budget=0.02, tpot_budget=0.02)
    rng = random.Random(3)
    assert not any(_fails(_level(rng, 8, 0.01, 0.002), s) for _ in range(200))


def test_an_unstable_baseline_widens_the_threshold_up_to_its_cap():
    """Baseline blocks alternating 1000 / 600 tokens/s: the noise floor is marked unstable and the
    material threshold widens to the baseline's drift against itself — but to at most twice the
    budget: a point estimate of a drift does not excuse any regression."""
    base = [1000.0, 600.0] * 4
    cand = [990.0, 610.0] * 4
    c = compare(Budget("output_tokens_per_s", True, 0.02), "c4", base, cand, 0.98)
    assert c.noise_unstable(0.01) and c.threshold == pytest.approx(NOISE_CAP * 0.02)
    steady = compare(Budget("output_tokens_per_s", True, 0.02), "c4", [1000.0, 1001.0] * 4, [990.0, 991.0] * 4, 0.98)
    assert not steady.noise_unstable(0.01)


def test_the_launch_spread_widens_the_interval_and_zero_is_the_t_test():
    """τ = 0 is scipy's one-sample t interval exactly; τ > 0 widens it by sqrt(2τ²/K) in log space."""
    from scipy import stats

    rng = random.Random(1)
    base = [1000 * math.exp(rng.gauss(0, 0.05)) for _ in range(12)]
    cand = [b * math.exp(rng.gauss(0, 0.05)) for b in base]
    plain = compare(Budget("output_tokens_per_s", True, 0.1), "c1", base, cand, 0.9)
    d = [math.log(c / b) for b, c in zip(base, cand)]
    lo, hi = stats.ttest_1samp(d, 0.0).confidence_interval(0.9)
    assert plain.ci == pytest.approx((math.exp(lo), math.exp(hi)))
    wide = compare(Budget("output_tokens_per_s", True, 0.1), "c1", base, cand, 0.9, spread=0.025, launches=2)
    assert wide.ci[0] < plain.ci[0] and wide.ci[1] > plain.ci[1] and wide.p_worse != plain.p_worse


def test_too_few_pairs_are_not_judged():
    c = compare(Budget("tpot_p50_s", False, 0.02), "c1", [0.004, None], [0.005, None], 0.98)
    assert c.unjudged and c.ratio is None


def test_baseline_choice():
    bundled = TargetSpec("bundled", faults=("decode-slowdown",))
    url = TargetSpec("url", url="http://127.0.0.1:9")
    ref = TargetSpec("bundled", profile="reference")
    auto = choose("auto", bundled, ref)
    assert auto.kind == "launch" and auto.spec is not None and auto.spec.faults == ()
    none = choose("auto", url, ref)
    assert none.kind == "none" and "not a build of the candidate's engine" in none.why
    assert choose("reference", url, ref).kind == "reference"
    assert choose("auto", url, TargetSpec("url", url="http://127.0.0.1:8")).kind == "reference"
    v31, v32 = TargetSpec("launch", command="vllm serve m --port {port}"), TargetSpec("launch", command="vllm2 serve m --port {port}")
    both = choose("auto", v32, v31)  # gatekeeper starts both: each launch round starts the reference's build afresh
    assert both.kind == "launch" and both.spec == v31 and "launched afresh" in both.why
    assert choose("auto", v32, TargetSpec("url", url="http://127.0.0.1:8")).kind == "reference"  # a URL: as it runs
    with pytest.raises(ConfigError, match="bundled candidate"):
        choose("candidate-without-faults", url, ref)


def test_refused_baseline_is_a_plan_time_error(tmp_path: Path):
    policy = tmp_path / "p.yaml"
    policy.write_text(SMALL + "    baseline: candidate-without-faults\n")
    out = gk_run(tmp_path / "runs", "--gates", "performance", "--policy", str(policy),
                 "--candidate", "http://127.0.0.1:9")
    assert out.code == 3 and "candidate-without-faults needs a bundled candidate" in out.stderr
    assert out.summary is None


@pytest.mark.slow  # a real run of about two minutes, shared with the real-browser test's performance ROLLBACK
@pytest.mark.serial  # measures speed: alone on the machine
def test_slowed_candidate_rolls_back_on_the_performance_gate(shared_run):
    """decode-slowdown=100 (decode twice as long) against the candidate's own launch without the fault: a blocking FAIL
    on the primary figure after the third launch round and on TPOT (and the gate names its baseline)."""
    out = shared_run(*SLOWED_RUN)
    assert out.summary is not None, out.stderr
    assert out.summary["verdict"] == "ROLLBACK", out.summary["reasons"]
    tpot = out.check("performance.c4.tpot_p50_s")
    assert tpot["status"] == "FAIL" and tpot["blocking"]
    assert tpot["metrics"]["ratio"] > 1.3
    primary = out.check("performance.primary")  # decided in launch rounds, at the first round allowed to decide
    assert primary["status"] == "FAIL" and primary["blocking"] and primary["metrics"]["rounds"] == 3, primary
    assert primary["metrics"]["llr"] >= primary["metrics"]["boundaries"][1] and primary["metrics"]["ratio"] > 1.3
    assert primary["metrics"]["launched_first"] == ["baseline", "candidate", "baseline"]  # the launch order alternates
    assert "without faults" in out.check("performance.measurement")["metrics"]["baseline"]
    assert (out.run_dir / "performance.html").read_text().count("perf-table") == 1
    history = out.check("performance.history")  # appended beside the run directories
    assert history["status"] == "SKIP" and (out.run_dir.parent / "perf-history.jsonl").read_text().count("\n") == 1
    line = json.loads((out.run_dir.parent / "perf-history.jsonl").read_text())
    assert line["metrics"]["c1.decode_s_per_token.ratio"] == pytest.approx(primary["metrics"]["ratio"])  # the primary too


def test_not_measured_when_correctness_did_not_pass(tmp_path: Path):
    """silent-fallback under a policy whose fallback rule is an advisory FAIL: gate 1 holds the
    run without stopping it; the performance gate measures nothing and says why."""
    policy = tmp_path / "p.yaml"
    policy.write_text(SMALL.replace("gates:\n", "checks:\n  - {match: startup.log_rules, blocking: false}\n"
                                    "  - {match: startup.path_change, blocking: false}\ngates:\n"
                                    "  startup:\n    log_rules:\n      - {pattern: \"(?i)fall(ing)? ?back\", severity: FAIL}\n"))
    out = gk_run(tmp_path / "runs", "--gates", "startup,performance", "--policy", str(policy),
                 "--candidate-fault", "silent-fallback")
    assert out.summary is not None and out.summary["verdict"] == "HOLD", out.summary and out.summary["reasons"]
    skipped = out.check("performance.not_run")
    assert skipped["status"] == "SKIP" and "correctness did not pass" in skipped["reason"]
    assert [c["id"] for c in out.gate("performance")["checks"]] == ["performance.not_run", "performance.coverage"]


def _ctx():
    from gatekeeper.gates.interface import GateContext
    return GateContext(gate_id="performance", reference=None, candidate=None, settings=None, blocking_rule=lambda check_id: True,
                       capabilities={}, record=lambda c: None)


def _entry(i: int, tps: float):
    from gatekeeper.perf.history import HistoryEntry
    return HistoryEntry(run_id=f"run-{i:02d}", finished_at=f"2026-11-{i:02d}T00:00:00+00:00", label="candidate", baseline="baseline",
                        metrics={"c8.output_tokens_per_s": tps, "c8.tpot_p50_s": 8.0 / tps})


@pytest.mark.parametrize("decline", [True, False])
def test_history_names_the_run_a_slow_drift_began(tmp_path: Path, decline: bool):
    """A slow drift (docs/bug-classes.md#decode-regression): throughput 2.5% lower every run from
    run 4 on. The tenth run's check names a change point at run 4 ±1 that made throughput worse; a
    flat history passes."""
    from gatekeeper.gates.performance.history_check import history_check
    from gatekeeper.perf.history import append_entry
    pytest.importorskip("otava")
    rng = random.Random(5)
    values = [1000.0 * (0.975 ** max(0, i - 2) if decline else 1.0) * (1 + rng.gauss(0, 0.004)) for i in range(10)]
    path = tmp_path / "h.jsonl"
    for i, v in enumerate(values[:-1], 1):
        append_entry(path, _entry(i, v))
    ctx = _ctx()
    history_check(ctx, path, _entry(10, values[-1]), {"output_tokens_per_s": True, "tpot_p50_s": False})
    [check] = ctx.checks
    assert not check.blocking
    if decline:
        assert check.status.value == "WARN", check.reason
        runs = [int(c[1].split("from run ")[1].split()[0]) for c in check.metrics["change_points"]
                if c[0] == "c8.output_tokens_per_s"]
        assert runs and abs(runs[0] - 4) <= 1, check.metrics["change_points"]
    else:
        assert check.status.value == "PASS", check.reason


def test_history_needs_enough_runs(tmp_path: Path):
    from gatekeeper.gates.performance.history_check import history_check
    ctx = _ctx()
    history_check(ctx, tmp_path / "new" / "h.jsonl", _entry(1, 1000.0), {})
    [check] = ctx.checks
    assert check.status.value == "SKIP" and "appended run 1" in check.reason
    assert (tmp_path / "new" / "h.jsonl").read_text().count("\n") == 1


def test_perf_load_command_measures_a_real_server(tmp_path: Path):
    """`gatekeeper perf load URL` against the bundled engine: every request measured, the
    server's usage counts 32 output tokens each (ignore_eos), figures in JSON."""
    import json
    import subprocess
    import sys

    from paths import GK_TINY
    from server_util import running_server

    with running_server(GK_TINY,
                        "--profile", "optimized") as server:
        proc = subprocess.run([sys.executable, "-m", "gatekeeper.cli", "perf", "load", server.url + "/v1",
                               "--requests", "8", "--warmup", "2", "--concurrency", "4", "--json"],
                              capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    f = data["figures"]
    assert data["model"] == "gk-tiny" and f["requests"] == 8 and f["error_rate"] == 0
    assert f["output_tokens_per_s"] * f["wall_s"] == pytest.approx(8 * 32, rel=1e-6)
    assert f["tpot_p50_s"] > 0 and f["ttft_p50_s"] > 0


def test_a_wide_interval_is_inconclusive_not_a_pass():
    """No effect, but 3 noisy pairs: not significant, and the interval still allows a large
    regression — `excluded()` is False, so the gate WARNs 'inconclusive' instead of passing."""
    c = compare(Budget("tpot_p50_s", False, 0.02), "c2", [0.004, 0.006, 0.004, 0.005], [0.0055, 0.004, 0.005, 0.004], 0.98)
    assert c.p_worse is not None and c.p_worse > 0.01 and not c.excluded()
    tight = compare(Budget("tpot_p50_s", False, 0.02), "c2", [0.004, 0.00401] * 4, [0.00400, 0.00402] * 4, 0.98)
    assert tight.excluded()


def test_a_variant_keeps_the_lengths_and_changes_the_words():
    """The noise floor's two baseline blocks ask for the same work, in words a prefix cache cannot match."""
    w = PerformanceSettings().workload()
    one, other = w.requests(8, 5), w.requests(8, 5, variant=1)
    assert [r.body["max_tokens"] for r in one] == [r.body["max_tokens"] for r in other]
    assert [len(r.body["prompt"].split()) for r in one] == [len(r.body["prompt"].split()) for r in other]
    assert all(a.body["prompt"] != b.body["prompt"] for a, b in zip(one, other))
    assert [r.body for r in w.requests(8, 5, variant=1)] == [r.body for r in other]  # seeded


def test_pairs_per_level_come_from_the_request_budget():
    s = PerformanceSettings(level_requests=96)
    assert (s.pairs_at(1), s.requests_per_block(1)) == (24, 4)
    assert (s.pairs_at(8), s.requests_per_block(8)) == (12, 8)
    assert s.pairs_at(64) == 4  # never fewer than two noise-floor sets
    assert PerformanceSettings(pairs=6).pairs_at(1) == 6
    with pytest.raises(SettingError, match="at least 3"):
        PerformanceSettings(pairs=2)


def _blocks(outputs: dict[str, list[tuple[int, str | None]]]) -> LevelBlocks:
    """One level, one block per side, whose requests gave these (output tokens, error)."""
    from gatekeeper.perf.figures import block_figures
    from gatekeeper.perf.loadgen import LoadProfile, LoadResult, RequestRecord

    lv = LevelBlocks(1)
    for side, rows in outputs.items():
        records = [RequestRecord(index=i, scheduled_s=i * 1.0, sent_s=i * 1.0, end_s=i + 0.5, chunk_s=(i + 0.1,) * bool(n), output_tokens=n,
                                 prompt_tokens=8, usage_reported=True, error=err)
                   for i, (n, err) in enumerate(rows)]
        result = LoadResult(LoadProfile(), records, 0.0, len(rows))
        lv.results[side].append(result)
        lv.figures[side].append(block_figures(result, PerformanceSettings().slo()))
    return lv


def test_an_answer_without_tokens_is_an_answer_not_a_failed_request():
    """llama-cpp-python does not honour ignore_eos: now and then the model ends a synthetic request at
    once, on both sides. The baseline's figures still describe it; only requests that got no answer
    make them no baseline."""
    from gatekeeper.endpoints.client import Endpoint
    from gatekeeper.gates.interface import GateContext
    from gatekeeper.gates.performance.measurement_check import measurement_check
    from gatekeeper.perf.workload import Workload
    from gatekeeper.results import Status

    def measure(lv: LevelBlocks):
        ep = Endpoint("reference", "http://127.0.0.1:9", "m")  # never asked: the measurement judges recorded blocks
        ctx = GateContext(gate_id="performance", reference=ep, candidate=ep, settings=PerformanceSettings(), blocking_rule=lambda c: True,
                          capabilities={}, record=lambda r: None)
        valid = measurement_check(ctx, [lv], "the reference", Workload())
        return valid, ctx.checks[-1]

    valid, check = measure(_blocks({"baseline": [(32, None), (0, None), (32, None)], "candidate": [(32, None)] * 3}))
    assert valid == (True, "") and check.status is Status.PASS, check.reason
    assert check.metrics["empty_answers"] == {"baseline": 1, "candidate": 0}
    assert "answers without a token" in check.reason and "baseline 1, candidate 0" in check.reason
    valid, check = measure(_blocks({"baseline": [(32, None), (0, "http error (HTTP 500)")], "candidate": [(32, None)] * 2}))
    assert not valid[0] and check.status is Status.ERROR and check.metrics["baseline_failed_requests"] == 1
