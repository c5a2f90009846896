"""The "what changed" block near the verdict: the stated path's differences and the warning lines
only the candidate's log printed (gate 1's `new_warnings`), or why the logs were not compared."""

from __future__ import annotations

import dataclasses
from html import escape

from gatekeeper.evidence import Log
from gatekeeper.gates.startup.checks import NEW_WARNINGS
from gatekeeper.report import render_correctness_html
from gatekeeper.report.run.markdown import MarkdownRenderer
from gatekeeper.report.run.data import build_report_data
from gatekeeper.report.correctness.what_changed import MAX_WARNINGS, what_changed
from gatekeeper.results import CheckResult, RunResult, Status
from report_runs import TARGETS, rollback_run


def _with(run: RunResult, warnings: CheckResult | None, observed: tuple[dict[str, str], dict[str, str]] = ({}, {})) -> RunResult:
    targets = tuple(dataclasses.replace(t, observed=tuple(sorted(o.items()))) for t, o in zip(TARGETS, observed))
    gates = []
    for g in run.gates:
        checks = tuple(c for c in g.checks if c.id != NEW_WARNINGS)
        if g.id == "startup" and warnings is not None:
            checks += (warnings,)
        gates.append(dataclasses.replace(g, checks=checks))
    return dataclasses.replace(run, targets=targets, gates=tuple(gates))


def _warnings(lines: list[str], status: Status = Status.WARN, reason: str = "") -> CheckResult:
    return CheckResult(id=NEW_WARNINGS, gate="startup", status=status, blocking=False,
                       reason=reason or f"{len(lines)} warning line(s) the reference did not print",
                       metrics={"new_warnings": len(lines)},
                       evidence=(Log("new warning lines (normalised)", tuple(lines)),) if lines else ())


def test_a_path_change_and_new_warnings_lead_both_reports() -> None:
    lines = [f"WARNING <time> falling back to kernel {i}" for i in range(MAX_WARNINGS + 3)]
    run = _with(rollback_run(), _warnings(lines),
                ({"engine_version": "0.31.0", "dtype": "float32"}, {"engine_version": "0.32.0", "dtype": "float32",
                                                                    "attention_backend": "sdpa"}))
    changed = what_changed(run)
    assert changed is not None
    assert changed.lines[:2] == ("stated path: engine_version 0.31.0 → 0.32.0",
                                 "stated path: only the candidate states attention_backend")
    assert changed.lines[2] == f"new log warnings: {len(lines)} line(s) the reference did not print (and 3 more):"
    assert changed.lines[3:] == tuple(f"  {w}" for w in lines[:MAX_WARNINGS])
    html = render_correctness_html(run)
    block = html[html.index('id="what-changed"'):html.index('id="seed-table"') if 'id="seed-table"' in html else None]
    assert "engine_version 0.31.0 → 0.32.0" in block and f'href="#check-{NEW_WARNINGS}"' in block
    assert escape(lines[0]) in block and escape(lines[MAX_WARNINGS]) not in block and "and 3 more" in block
    assert html.index('id="what-changed"') < html.index('id="failures"')  # near the verdict, above the findings
    md = MarkdownRenderer().render(build_report_data(run, ("summary.md", "correctness.html")))
    assert "- stated path: engine_version 0.31.0 → 0.32.0" in md and f"  - `{lines[0]}`" in md
    assert md.index("What changed:") < md.index("### Reasons")


def test_a_candidate_whose_log_was_not_read_says_so_rather_than_none() -> None:
    skipped = _warnings([], Status.SKIP, "the candidate is a URL target without a log: name its log_file")
    changed = what_changed(_with(rollback_run(), skipped))
    assert changed is not None and changed.lines == (
        "stated path: no difference where both state it",
        "new log warnings: not checked (the candidate is a URL target without a log: name its log_file)")
    clean = what_changed(_with(rollback_run(), _warnings([], Status.PASS, "no new warnings")))
    assert clean is not None and clean.lines[-1].startswith("new log warnings: none")
    no_gate1 = _with(rollback_run(), None)
    no_gate1 = dataclasses.replace(no_gate1, gates=tuple(g for g in no_gate1.gates if g.id != "startup"))
    assert what_changed(no_gate1).lines[-1] == "new log warnings: not checked (gate 1 did not run)"  # type: ignore[union-attr]


def test_a_run_without_both_targets_has_no_block() -> None:
    run = dataclasses.replace(rollback_run(), targets=TARGETS[:1])
    assert what_changed(run) is None and 'id="what-changed"' not in render_correctness_html(run)
