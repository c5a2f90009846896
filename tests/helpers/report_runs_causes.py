"""A hand-built run whose golden failures share causes, for the failures cards (gatekeeper/signature.py).

`same_cause_run()`: a candidate that drops the last character of every answer, as a real run of
one shows it — five `eos` cases fail alike (each with its own words, numbers and diff), two JSON
cases alike, one code case alone, an ERROR alone, and a `pass_rate` summary. The verdict and its
reasons come from `verdict.decide`, as in a real run.
"""

from __future__ import annotations

from gatekeeper.evidence import from_json
from gatekeeper.results import CheckResult, GateResult, RunResult, Status
from gatekeeper.verdict import decide
from report_runs import TARGETS, _check, _gate, startup_gate

WORDS = ("tiger", "done", "salmon", "amber", "sushi")
EOS_CASES = tuple(f"eos-{i}" for i in range(1, len(WORDS) + 1))
JSON_CASES = ("json-facts-4", "json-schema-2")


def _eos(case: str, word: str, runs: int) -> CheckResult:
    cut = word[:-1]
    return _check(
        "golden", case, Status.FAIL,
        f"FAIL: regression, the reference passes equals: expected exactly '{word}', got '{cut}'; the reference agrees "
        f"with itself across {runs} runs",
        family="eos",
        metrics={"assertions": 4, "failed": [f"equals(value={word!r})"], "candidate_tokens": len(cut),
                 "similarity": round(2 * len(cut) / (2 * len(word) - 1), 4)},
        evidence=(from_json("text_pair", "reference vs candidate",
                            {"reference": word, "candidate": cut, "divergence": None, "prompt": f"Say {word}."}),),
    )


def golden_causes_gate() -> GateResult:
    """The golden gate of `same_cause_run`."""
    checks = [_check("golden", "canary-ok", Status.PASS, "equals 'OK'", family="short_answer")]
    checks += [_eos(case, word, 2 + i % 2) for i, (case, word) in enumerate(zip(EOS_CASES, WORDS))]
    checks += [_check("golden", case, Status.FAIL,
                      f"FAIL: json_schema: the answer is not JSON (Expecting ',' delimiter: line 1 column {10 + 7 * i} "
                      f"(char {9 + 7 * i})): '{{\"age\": {50 + i}'", family="json", metrics={"assertions": 3})
               for i, case in enumerate(JSON_CASES)]
    checks += [
        _check("golden", "code-2", Status.FAIL, "FAIL: regression, the reference passes python_ast: not valid Python",
               family="code"),
        _check("golden", "tool-weather", Status.ERROR, "timeout error at http://127.0.0.1:41002/v1/chat/completions",
               family="tool_call"),
        _check("golden", "pass_rate", Status.FAIL, "candidate passes 12.5% of cases, the reference 100.0%"),
    ]
    return _gate("golden", 3, "Golden prompts", checks)


def same_cause_run() -> RunResult:
    """Startup passes; golden fails as described in the module docstring."""
    gates = (startup_gate(), golden_causes_gate())
    verdict, reasons = decide(list(gates))
    return RunResult(run_id="20261205-causes", started_at="2026-12-05T23:00:00Z", finished_at="2026-12-05T23:01:00Z",
                     verdict=verdict, reasons=tuple(reasons), targets=TARGETS, gates=gates,
                     policy="gates/smoke.yaml", golden_sets=("golden_sets/core.yaml",), seed=7)
