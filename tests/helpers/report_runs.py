"""Hand-built RunResults for the report tests (renderers are pure functions of this data).

`rollback_run()` exercises every evidence kind, every status, hostile model output and a NaN
metric, its logprob histogram a key chart; `promote_run()` is the quiet path; `hold_run()` has an
ERROR and a blocking SKIP and no timings at all. Runs with every gate's key charts are in
report_runs_charts.py.
"""

from __future__ import annotations

from gatekeeper.evidence import from_json
from gatekeeper.results import (
    CheckResult,
    Coverage,
    GateResult,
    RequestTiming,
    RunResult,
    Status,
    TargetInfo,
    Verdict,
)

XSS = "<script>alert(1)</script>"
LONG_WORD = "x" * 600  # no break opportunity: must wrap, not widen the page

TARGETS = (
    TargetInfo(
        role="reference",
        kind="bundled",
        description="bundled reference path (fp32, contiguous cache)",
        base_url="http://127.0.0.1:41001",
        model="tiny-instruct",
        startup_s=1.25,
        version="0.1.0",
    ),
    TargetInfo(
        role="candidate",
        kind="bundled",
        description="bundled optimized path, faults: eos-ignored",
        base_url="http://127.0.0.1:41002",
        model="tiny-instruct",
        startup_s=1.5,
        version="0.1.0",
        log_path="/tmp/run-x/candidate.log",
    ),
)


def _check(
    gate: str, name: str, status: Status, reason: str, blocking: bool = True, **kw: object
) -> CheckResult:
    return CheckResult(
        id=f"{gate}.{name}", gate=gate, status=status, blocking=blocking, reason=reason, duration_s=0.25, **kw
    )  # type: ignore[arg-type]


def _gate(gid: str, stage: int, title: str, checks: list[CheckResult], **kw: object) -> GateResult:
    order = [Status.ERROR, Status.FAIL, Status.SKIP, Status.WARN, Status.PASS]
    worst = min((c.status for c in checks), key=order.index, default=Status.PASS)
    if "coverage" not in kw:  # as the runner derives it for a gate that counts nothing itself
        skipped = sum(c.status is Status.SKIP for c in checks)
        errors = sum(c.status is Status.ERROR for c in checks)
        kw["coverage"] = Coverage(len(checks) - skipped - errors,
                                  tuple((why, n) for why, n in (("could not run", errors), ("skipped", skipped)) if n), 0.5)
    return GateResult(
        id=gid,
        stage=stage,
        title=title,
        description=f"What the {title} gate checks.\nSecond line of the description.",
        status=worst,
        checks=tuple(checks),
        duration_s=2.5,
        **kw,
    )  # type: ignore[arg-type]


def _timings(gates: tuple[str, ...]) -> tuple[RequestTiming, ...]:
    rows = []
    for i in range(20):
        for gate in gates:
            rows.append(RequestTiming("reference", gate, 0.5 + 0.01 * i, 0.05 + 0.001 * i, 20))
            rows.append(
                RequestTiming("candidate", gate, 0.4 + 0.01 * i, 0.04 + 0.001 * i if i % 2 else None, 20)
            )
    return tuple(rows)


def startup_gate(status: Status = Status.PASS) -> GateResult:
    return _gate(
        "startup",
        1,
        "Startup",
        [
            _check("startup", "ready", Status.PASS, "candidate ready in 1.50 s", metrics={"startup_s": 1.5}),
            _check("startup", "canary", Status.PASS, "both answered 'OK'"),
            _check(
                "startup",
                "new_warnings",
                status if status != Status.PASS else Status.WARN,
                "1 warning line the reference did not print",
                blocking=False,
                evidence=(
                    from_json(
                        "log",
                        "candidate startup log (new lines)",
                        {"lines": ["INFO starting", "WARNING: falling back to SDPA kernel", LONG_WORD]},
                    ),
                ),
            ),
        ],
    )


def numerics_gate() -> GateResult:
    deltas = [0.001 * i for i in range(50)] + [2.5, float("nan")]
    return _gate(
        "numerics",
        2,
        "Numerical consistency",
        [
            _check(
                "numerics",
                "logprob_delta",
                Status.FAIL,
                "max |Δlogprob| 2.5 > tolerance 0.05 (noise floor 0.002)",
                metrics={
                    "max_abs_delta": 2.5,
                    "mean_abs_delta": 0.07,
                    "p99_abs_delta": 2.1,
                    "nan_count": 1,
                    "first_nan": float("nan"),
                    "tolerance": {"max_abs_delta": 0.05, "noise_floor": 0.002},
                },
                evidence=(
                    from_json(
                        "histogram",
                        "per-token |Δlogprob|",
                        {"values": deltas, "label": "|Δlogprob|", "threshold": 0.05},
                        is_key=True,
                    ),
                    from_json(
                        "table",
                        "worst prompts",
                        {
                            "columns": ["prompt", "max |Δ|", "top-1 agree"],
                            "rows": [["numerics-03", 2.5, 0.62], ["numerics-01", 0.01, 1.0]],
                        },
                    ),
                    from_json(
                        "text_pair",
                        "numerics-03 greedy continuation",
                        {
                            "reference": "The capital of France is Paris.",
                            "candidate": "The capital of France is !!!!!!!!",
                            "divergence": 25,
                            "prompt": "Q: capital of France?",
                        },
                    ),
                ),
            ),
            _check(
                "numerics",
                "top1_agreement",
                Status.PASS,
                "top-1 agreement 0.998 ≥ 0.99",
                metrics={"top1_agreement": 0.998},
            ),
        ],
        stopped_run=True,
    )


def golden_gate() -> GateResult:
    return _gate(
        "golden",
        3,
        "Golden prompts",
        [
            _check("golden", "short-ok", Status.PASS, "equals 'OK'", family="deterministic"),
            _check(
                "golden",
                "eos-stop",
                Status.FAIL,
                "finish_reason 'length', expected 'stop' (reference: stop)",
                family="eos",
                evidence=(
                    from_json(
                        "text_pair",
                        "answer",
                        {
                            "reference": "Done.",
                            "candidate": "Done. Done. Done. " + XSS,
                            "divergence": None,
                            "prompt": "Say done & stop <now>",
                        },
                    ),
                ),
            ),
            _check(
                "golden",
                "json-user",
                Status.PASS,
                "valid against schema",
                family="json",
                evidence=(from_json("json", "parsed object", {"name": "Ada", "age": 36}),),
            ),
            _check(
                "golden",
                "tool-weather",
                Status.ERROR,
                "HTTP 500 from candidate: internal error | retry later",
                family="tools",
                metrics={"error_kind": "http", "status_code": 500},
            ),
            _check(
                "golden",
                "refusal",
                Status.SKIP,
                "both fail: the case does not suit this model",
                blocking=False,
                family="refusal",
            ),
            _check(
                "golden",
                "multi-round",
                Status.PASS,
                "quality stable over 4 rounds",
                family="multi_turn",
                evidence=(
                    from_json(
                        "series",
                        "score by round",
                        {
                            "x": [1, 2, 3, 4],
                            "series": {"reference": [1.0, 1.0, 0.9, 1.0], "candidate": [1.0, 0.8, 0.6, 0.4]},
                            "x_label": "round",
                            "y_label": "score",
                        },
                    ),
                ),
            ),
            _check(
                "golden",
                "long-word",
                Status.WARN,
                "long output: " + LONG_WORD,
                blocking=False,
                family="long_output",
                evidence=(
                    from_json(
                        "text_pair",
                        "long output",
                        {
                            "reference": LONG_WORD,
                            "candidate": LONG_WORD + "y",
                            "divergence": None,
                            "prompt": None,
                        },
                    ),
                ),
            ),
        ],
    )


def rollback_run() -> RunResult:
    return RunResult(
        run_id="20261129-230000-abcd",
        started_at="2026-11-29T23:00:00Z",
        finished_at="2026-11-29T23:01:30Z",
        verdict=Verdict.ROLLBACK,
        reasons=(
            "numerics.logprob_delta FAIL (blocking): max |Δlogprob| 2.5 > tolerance 0.05",
            "golden.eos-stop FAIL (blocking)",
        ),
        targets=TARGETS,
        gates=(startup_gate(), numerics_gate(), golden_gate()),
        timings=_timings(("startup", "numerics", "golden")),
        policy="/tmp/checkout/gates/default.yaml",
        golden_sets=("golden_sets/core.yaml",),
        seed=1234,
    )


def promote_run() -> RunResult:
    gate = _gate(
        "golden",
        3,
        "Golden prompts",
        [_check("golden", "short-ok", Status.PASS, "equals 'OK'", family="deterministic")],
    )
    return RunResult(
        run_id="20261129-230500-ef01",
        started_at="2026-11-29T23:05:00Z",
        finished_at="2026-11-29T23:06:00Z",
        verdict=Verdict.PROMOTE,
        reasons=("all blocking checks passed",),
        targets=TARGETS,
        gates=(_gate("startup", 1, "Startup", [_check("startup", "ready", Status.PASS, "ready")]), gate),
        timings=_timings(("startup", "golden")),
        policy="gates/default.yaml",
        golden_sets=("golden_sets/core.yaml",),
        seed=0,
    )


def hold_run() -> RunResult:
    return RunResult(
        run_id="hold",
        started_at="2026-11-29T23:10:00Z",
        finished_at="2026-11-29T23:10:05Z",
        verdict=Verdict.HOLD,
        reasons=("numerics.logprobs SKIP (blocking): candidate does not return logprobs",),
        targets=TARGETS,
        gates=(
            _gate(
                "numerics",
                2,
                "Numerical consistency",
                [
                    _check("numerics", "logprobs", Status.SKIP, "candidate does not return logprobs"),
                    _check(
                        "numerics",
                        "prompt_nll",
                        Status.ERROR,
                        "connection refused: http://127.0.0.1:41002/v1/completions",
                    ),
                ],
            ),
        ),
    )
