"""Hand-built RunResults with every gate's key charts, for the report-layout tests.

Each gate that draws a key chart in a real run draws it here too, marked `is_key` as the gate
marks it: gate 2's logprob histogram, gate 4's needle heatmap and decay curve (the candidate's
line exactly on the reference's, the case that used to hide one), gate 5's sequential evidence per
stage, the performance gate's ratio intervals and capacity curves. The verdict and its reasons come
from `verdict.decide`, as in a real run.

`promote_full_run()` passes every gate; `shadow_rollback_run()` fails gate 5's canary (so the
performance gate skips);
`perf_rollback_run()` fails a blocking performance budget (another, advisory, is undecided in both);
`partial_promote_run()` ran only startup and golden (`--gates startup,golden`).
"""

from __future__ import annotations

from dataclasses import replace

from gatekeeper.evidence import Heatmap, Histogram, Interval, Intervals, Series, Table
from gatekeeper.results import GateResult, RunResult, Status
from gatekeeper.verdict import decide
from report_runs import TARGETS, _check, _gate, _timings, startup_gate

STAGES = (("low-risk-tenant", 24), ("quarter", 150), ("wide", 600))


def numerics_pass_gate() -> GateResult:
    hist = Histogram("|Δ logprob| of the reference token", [0.0001 * i for i in range(200)], "|Δ logprob| (nats)", 0.05,
                     is_key=True)
    return _gate("numerics", 2, "Numerical consistency", [
        _check("numerics", "max_logprob_delta", Status.PASS, "max_abs_delta 0.0199 vs limit 0.05", evidence=(hist,),
               metrics={"value": 0.019900000000000001, "limit": 0.05}),
        _check("numerics", "top1_agreement", Status.PASS, "top1_agreement 1.0000 vs minimum 0.99"),
    ])


def golden_pass_gate() -> GateResult:
    return _gate("golden", 3, "Golden prompts", [
        _check("golden", "canary-ok", Status.PASS, "equals 'OK'", family="short_answer",
               metrics={"judged": True, "reference_passes": True, "candidate_passes": True}),
        _check("golden", "json-facts-4", Status.PASS, "valid against schema", family="json",
               metrics={"judged": True, "reference_passes": True, "candidate_passes": True}),
        _check("golden", "pass_rate", Status.PASS, "candidate passes 100.0% of cases, the reference 100.0%", evidence=(
            Heatmap("cases passed by family: reference, candidate (green all, red none)", ["json", "short_answer"],
                    ["reference", "candidate"], [[1.0, 1.0], [1.0, 1.0]], [["1/1", "1/1"], ["1/1", "1/1"]], is_key=True),)),
    ])


def longctx_gate() -> GateResult:
    rates = (1.0, 0.9, 0.9, 0.8, 0.8, 0.7)
    curve = Series("recall by round (and the candidate's agreement with the reference)", range(1, 7),
                   {"reference": rates, "candidate": rates, "agreement": (1.0,) * 6}, "round", "pass rate", is_key=True)
    heat = Heatmap("needle grid (reference, candidate)", ["256 tokens", "1024 tokens", "2000 tokens"],
                   ["depth 0", "depth 0.5", "depth 1"], [[1.0, 1.0, 1.0], [1.0, 1.0, None], [None, 1.0, None]],
                   [["✓ ✓", "✓ ✓", "✓ ✓"], ["✓ ✓", "✓ ✓", "✗ ✗"], ["✗ ✗", "✓ ✓", "✗ ✗"]], is_key=True)
    return _gate("longctx", 4, "Long context and tool calling", [
        _check("longctx", "needle_grid", Status.PASS, "0 of 9 cells regress (limit 0)", evidence=(heat,),
               metrics={"cells": 9, "reference_pass": 6, "candidate_pass": 6, "judged": 6}),
        _check("longctx", "session_decay", Status.PASS, "no excess decay", evidence=(curve,)),
    ])


def shadow_gate(fail_at: str | None = None) -> GateResult:
    checks = []
    for name, n in STAGES:
        fired = name == fail_at
        x = list(range(1, n + 1, max(1, n // 60)))
        e = [0.04 * i if fired else 0.1 * ((i * 7) % 5 - 2) / 10 for i in range(len(x))]
        seq = Series(f"stage {name}: sequential evidence (all traffic, disagreement)", x,
                     {"log10 e-value": e, "rejection threshold log10(1/alpha)": [1.6] * len(x)}, "requests replayed",
                     "log10 e-value", is_key=True)
        slices = Table("slices (disagreement: candidate / twin)", ("slice", "pairs", "judged", "score"),
                       [("all", n, n, "100"), ("tenant=batch", 0, 0, "not judged")])
        status = Status.FAIL if fired else Status.PASS
        reason = (f"answers_differ fired in all after {n} of {n} requests (candidate 31.0% vs twin 0.0%)" if fired
                  else f"{n} requests: no measure beyond the noise floor; score 100")
        checks.append(_check("shadow", f"stage.{name}", status, reason, evidence=(slices, seq)))
        if fired:
            checks.append(_check("shadow", "rule.answers_differ", Status.FAIL, f"fired at stage {name}"))
            break
    return _gate("shadow", 5, "Shadow traffic and canary", checks)


def performance_gate(slow: bool = False) -> GateResult:
    def compared(metric: str, baseline: float, ratio: float, ci: tuple[float, float], limit: float, status: Status,
                 undecided: bool = False):  # type: ignore[no-untyped-def]
        interval = Intervals(f"{metric} at concurrency 4: candidate / baseline",
                             (Interval(f"{metric} at concurrency 4", ratio, ci[0], ci[1], limit),), 1.0,
                             "candidate / baseline", is_key=True)
        return _check("performance", f"c4.{metric}", Status.WARN if undecided else status,
                      f"candidate/baseline {ratio:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]", blocking=not undecided,
                      evidence=(interval,), undecided=undecided,
                      metrics={"level": 4, "metric": metric, "baseline": baseline, "candidate": baseline * ratio,
                               "ratio": ratio, "ci": list(ci)})
    levels = (1, 2, 4, 8)
    curves = [Series(f"{title} vs concurrency (knee: baseline 4, candidate {2 if slow else 4})", levels,
                     {"baseline": base, "candidate": tuple(v * (0.6 if slow and key == "tok" else 1.0) for v in base),
                      **extra}, "concurrency", unit, is_key=True)
              for title, key, unit, base, extra in (
                  ("output tokens/s", "tok", "tokens/s", (250.0, 480.0, 880.0, 1500.0), {}),
                  ("TTFT p95", "ttft", "ms", (20.0, 28.0, 41.0, 90.0), {"SLO 80 ms": (80.0,) * 4}))]
    checks = [
        _check("performance", "measurement", Status.PASS, "96 requests per side in counterbalanced pairs",
               metrics={"baseline": "the candidate's launch without faults (bundled:optimized)"}),
        compared("output_tokens_per_s", 878.312345678901, 0.6 if slow else 1.02, (0.55, 0.66) if slow else (0.97, 1.08), 0.97,
                 Status.FAIL if slow else Status.PASS),
        compared("tpot_p50_s", 0.00343, 1.01, (0.9, 1.12), 1.03, Status.WARN, undecided=True),
        _check("performance", "capacity", Status.WARN if slow else Status.PASS, "knee at concurrency 4 (baseline 4)",
               blocking=False, evidence=tuple(curves),
               metrics={"knee": {"baseline": "4", "candidate": "2" if slow else "4"}, "slo": {"ttft_p95_s": 0.08},
                        "cost_per_1000": {"baseline": 0.0109234, "candidate": 0.01033}, "price_per_accelerator_hour": 1.0}),
    ]
    return _gate("performance", 6, "Performance", checks)


def _run(run_id: str, gates: tuple[GateResult, ...]) -> RunResult:
    verdict, reasons = decide(list(gates))
    return RunResult(run_id=run_id, started_at="2026-12-03T05:00:00Z", finished_at="2026-12-03T05:04:00Z", verdict=verdict,
                     reasons=tuple(reasons), targets=TARGETS, gates=gates,
                     timings=_timings(tuple(g.id for g in gates if g.excluded is None)), policy="gates/smoke.yaml",
                     golden_sets=("golden_sets/core.yaml",), seed=0)


def promote_full_run() -> RunResult:
    return _run("promote-full", (startup_gate(), numerics_pass_gate(), golden_pass_gate(), longctx_gate(), shadow_gate(),
                                 performance_gate()))


def shadow_rollback_run() -> RunResult:
    not_measured = _gate("performance", 6, "Performance", [_check(
        "performance", "not_run", Status.SKIP, "not measured: correctness did not pass (verdict ROLLBACK); the speed of "
        "wrong answers is not a result", blocking=False)])
    return _run("shadow-rollback", (startup_gate(), numerics_pass_gate(), golden_pass_gate(), longctx_gate(),
                                    shadow_gate(fail_at="quarter"), not_measured))


def perf_rollback_run() -> RunResult:
    return _run("perf-rollback", (startup_gate(), numerics_pass_gate(), golden_pass_gate(), longctx_gate(), shadow_gate(),
                                  performance_gate(slow=True)))


def partial_promote_run() -> RunResult:
    gates = (startup_gate(), numerics_pass_gate(), golden_pass_gate(), longctx_gate(), shadow_gate(), performance_gate())
    left_out = {"numerics", "longctx", "shadow", "performance"}
    return _run("partial-promote", tuple(
        replace(g, checks=(), coverage=None, status=Status.SKIP, excluded="not selected by --gates") if g.id in left_out else g
        for g in gates))
