"""The automatic rollback conditions (docs/bug-classes.md#rollback-conditions) as named rules, each a
check `shadow.rule.<name>` with its evidence. Every one is blocking under the default policy.

Five are judged on the replayed pairs (the slices' critical measures, `analysis.py`), each
against the reference's own second run on the same requests:

- `task_success_down` (measure `task_failure`): requests whose checkable outcome failed — JSON asked
  for and not valid (against the json_schema where one is given), a tool call expected (the
  reference made one) and none valid, a refusal where the reference answered, not the `expected`
  answer where the traffic gives one (`task.py`). The source's "task success rate of shadow traffic
  drops" (docs/bug-classes.md#rollback-conditions). A broken JSON answer or tool call fails its task
  here and its structure in `structured_parse_drop`: one counts requests, the other parse rates;
- `answers_differ` (measure `disagreement`): answers that differ from the reference's — other
  text, other tool calls or arguments, other JSON — where the token review (`review.py`) did not
  find a near tie within the declared dtype's gap or the same tokens rendered differently. Not a
  task-success figure (another answer may serve as well), and blocking all the same: a confident
  divergence beyond the reference's own run-to-run noise is a change of behaviour that no
  checkable outcome may show — a stale KV block or a garbled batch answering fluent, wrong text;
  the check's evidence lists each confident divergence with both sides' top tokens and logprobs
  at the first differing token;
- `structured_parse_drop` (`json_parse`, `tool_parse`): JSON or tool calls stop parsing /
  validating against their schemas;
- `garbage_rate_up` (`degeneration`, `nonfinite`): degenerate output, NaN/Inf logprobs;
- `errors_up` (`error`): requests the reference answers and the candidate fails.

Three read what the earlier gates of this run found: `deterministic_probe` (the `Reply with
exactly: OK` canary of gates 1 and 3), `logit_drift` (gate 2's checks beyond their approved
tolerances), `kernel_or_dtype_change` (gate 1: an unexplained execution-path change,
`startup.path_change` — a fallback line the reference does not print, another backend or switch —
or an execution path other than the one declared).

A rule whose evidence does not exist in this run (no JSON or tool requests were replayed; gate 2
did not run) is a SKIP saying so, never a PASS.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from gatekeeper.gates.shadow.analysis import SliceResult
from gatekeeper.results import CheckResult, GateResult, Status

TASK_SUCCESS_DOWN = "task_success_down"
ANSWERS_DIFFER = "answers_differ"
PAIR_RULES: dict[str, tuple[str, ...]] = {
    TASK_SUCCESS_DOWN: ("task_failure",),
    ANSWERS_DIFFER: ("disagreement",),
    "structured_parse_drop": ("json_parse", "tool_parse"),
    "garbage_rate_up": ("degeneration", "nonfinite"),
    "errors_up": ("error",),
}
"""Each pair rule and the critical measures it is judged on (a rule's check id: `shadow.rule.<name>`)."""
MEASURES = {
    "task_failure": "requests whose checkable outcome failed",
    "disagreement": "answers that differ from the reference's beyond a near tie",
    "json_parse": "JSON that does not parse or validate",
    "tool_parse": "tool calls that do not parse or validate",
    "degeneration": "degenerate answers",
    "nonfinite": "NaN/Inf logprobs",
    "error": "failed requests",
}
"""What each critical measure counts, as a rule's reason says it."""
EARLIER_RULES = ("deterministic_probe", "logit_drift", "kernel_or_dtype_change")
_NOT_DRIFT = ("numerics.coverage", "numerics.scoring", "numerics.tokenization")
_FALLBACK = re.compile(r"(?i)fall(ing)? ?back|not supported|naive")


@dataclass(frozen=True)
class RuleOutcome:
    """One rule's status, reason and the figures behind it."""

    name: str
    status: Status
    reason: str
    evidence_rows: tuple[tuple[str, ...], ...] = ()


def pair_rule(name: str, slices: Sequence[SliceResult], stopped: str = "") -> RuleOutcome:
    """A rule over the slices' critical measures: FAIL naming every (slice, measure) that fired;
    `stopped` says why the evidence ends early (another measure fired first)."""
    measures = PAIR_RULES[name]
    fired, judged = [], 0
    for s in slices:
        for m in s.metrics:
            if m.name not in measures:
                continue
            if s.key == "all":
                judged += m.eligible
            if m.label == "Fired":
                fired.append((s.key, m))
    rows = tuple((key, m.name, f"{m.candidate_rate:.1%}", f"{m.twin_rate:.1%}", str(m.eligible),
                  f"{m.e_value:.3g}", str(m.fired_at)) for key, m in fired)
    if fired:
        key, m = fired[0]
        more = f" (and {len(fired) - 1} more)" if len(fired) > 1 else ""
        where = localise(m.name, slices)
        return RuleOutcome(name, Status.FAIL, f"{m.name} ({MEASURES[m.name]}) in {key}: the candidate "
                           f"{m.candidate_rate:.1%} vs the reference's own second run {m.twin_rate:.1%} of {m.eligible} "
                           f"pairs, e-value {m.e_value:.3g} (crossed after {m.fired_at} pairs){more}"
                           + (f"; {where}" if where else ""), rows)
    if judged == 0:
        what = {"structured_parse_drop": "no replayed request asked for JSON or offered tools the reference called",
                TASK_SUCCESS_DOWN: "no judged request had a checkable outcome"}.get(name, "no pair was judged")
        return RuleOutcome(name, Status.SKIP, f"not judged: {what}")
    what = "; ".join(f"{m} ({MEASURES[m]})" for m in measures)
    return RuleOutcome(name, Status.PASS, f"not fired: {what} within the noise floor over {judged} judged measurements "
                       "(every slice)" + (f"; {stopped}" if stopped else ""))


def localise(measure: str, slices: Sequence[SliceResult]) -> str:
    """Where a measure's excess over the twin sits: per dimension (tenant, kind, model), the
    slice with the largest excess when it is at least twice every other slice's, e.g.
    "concentrated in tenant=agents (25.0% vs twin 0.0%; other tenants at most 0.4%)"."""
    said = []
    for dim in ("tenant", "kind", "model"):
        rows = []
        for s in slices:
            if not s.key.startswith(dim + "="):
                continue
            for m in s.metrics:
                if m.name == measure and m.candidate_rate is not None and m.twin_rate is not None:
                    rows.append((m.candidate_rate - m.twin_rate, s.key, m))
        rows.sort(key=lambda r: r[0], reverse=True)
        if len(rows) >= 2 and rows[0][0] > 0 and rows[0][0] >= 2 * max(rows[1][0], 0.0):
            excess, key, m = rows[0]
            said.append(f"{key} ({m.candidate_rate:.1%} vs twin {m.twin_rate:.1%}; other {dim}s at most "
                        f"{max(rows[1][0], 0.0):.1%} above their twin)")
    return "concentrated in " + " and ".join(said) if said else ""


def _checks(earlier: Sequence[GateResult], gate: str) -> list[CheckResult] | None:
    for g in earlier:
        if g.id == gate and g.coverage is not None:
            return list(g.checks)
    return None


def earlier_rule(name: str, earlier: Sequence[GateResult]) -> RuleOutcome:
    """A rule read from the earlier gates' checks in this run."""
    if name == "deterministic_probe":
        found = [c for g in ("startup", "golden") for c in (_checks(earlier, g) or [])
                 if c.id in ("startup.canary.candidate", "golden.canary-ok")]
        if not found:
            return RuleOutcome(name, Status.SKIP, "not judged: neither gate 1's nor gate 3's canary ran in this run")
        bad = [c for c in found if c.status is Status.FAIL]
        if bad:
            return RuleOutcome(name, Status.FAIL, f"{bad[0].id}: {bad[0].reason}", tuple((c.id, c.status.value) for c in bad))
        passed = [c for c in found if c.status is Status.PASS]
        if not passed:  # both sides missed it (WARN) or it could not run (ERROR): nothing was judged
            return RuleOutcome(name, Status.SKIP, "not judged: no canary passed in this run ("
                               + ", ".join(f"{c.id} {c.status.value}" for c in found) + ")")
        return RuleOutcome(name, Status.PASS, "the deterministic canary passed: " + ", ".join(c.id for c in passed))
    if name == "logit_drift":
        checks = _checks(earlier, "numerics")
        if checks is None:
            return RuleOutcome(name, Status.SKIP, "not judged: gate 2 (numerics) did not run in this run")
        checks = [c for c in checks if c.id not in _NOT_DRIFT]  # what gate 2 could judge is not a drift figure
        bad = [c for c in checks if c.status is Status.FAIL]
        if bad:
            return RuleOutcome(name, Status.FAIL, f"gate 2: {', '.join(c.id for c in bad)} beyond the approved range",
                               tuple((c.id, c.reason[:120]) for c in bad))
        drift = [c for c in checks if c.status is Status.PASS and c.id != "numerics.nan_inf"]
        if not drift:  # NaN/Inf alone is no drift figure
            return RuleOutcome(name, Status.SKIP, "not judged: gate 2 judged no drift figure")
        return RuleOutcome(name, Status.PASS, "gate 2's drift figures are within their approved tolerances")
    checks = _checks(earlier, "startup")
    if checks is None:
        return RuleOutcome(name, Status.SKIP, "not judged: gate 1 (startup) did not run in this run")
    rows = []
    # startup.path_change judges fallback lines with the policy's explanations; the raw log lines
    # are read only for a run whose gate 1 did not judge path changes.
    judged_changes = any(c.id == "startup.path_change" and c.status is not Status.SKIP for c in checks)
    for c in checks:
        if c.id in ("startup.execution_path", "startup.path_change") and c.status is Status.FAIL:
            rows.append((c.id, c.reason[:160]))
        if judged_changes:
            continue
        if c.id in ("startup.log_rules", "startup.new_warnings") and c.status in (Status.WARN, Status.FAIL):
            for ev in c.evidence:
                lines = [str(r[-1]) for r in getattr(ev, "rows", ())] + [str(x) for x in getattr(ev, "lines", ())]
                rows += [(c.id, line[:160]) for line in lines if _FALLBACK.search(line)]
    if rows:
        return RuleOutcome(name, Status.FAIL, f"{rows[0][0]}: {rows[0][1]}", tuple(rows[:20]))
    judged = [c for c in checks if c.id in ("startup.log_rules", "startup.execution_path", "startup.path_change")
              and c.status is not Status.SKIP]
    if not judged:
        return RuleOutcome(name, Status.SKIP, "not judged: no candidate log and no stated execution path to read")
    return RuleOutcome(name, Status.PASS, "no fallback the reference does not print; the execution path is as judged")
