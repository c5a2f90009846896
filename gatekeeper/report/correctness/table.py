"""The correctness table (docs/bug-classes.md#correctness-table), built from the checks: the first
thing every report shows.

Five dimensions, each a row with its metric, threshold, the reference's and the candidate's
figures, how much was judged, and a status:

- Deterministic: the fixed short cases (golden family `short_answer`, and the startup canary) —
  the candidate passes every case the reference passes (without gate 3 the row is "not run" unless
  the canary failed: a canary alone is no PASS for the row);
- Structured: JSON and tool-call cases (families `json`, `tool_call`) — parse success not below
  the reference's; a failing streamed variant (`<case>.stream`) fails the row too, and so do cases
  not asked because the candidate lost a feature they need (the pass counts are over the cases asked);
- Numerical: logprob / perplexity drift (gate 2) within the dtype's tolerance (the row's status
  is gate 2's worst check);
- Degeneration: repeated tokens, garbage, empty output — 0 severe degenerations;
- Long context: fact recall over the needle grid (gate 4) not below the reference's;
- Shadow traffic: replayed requests answered as the reference answers them, beyond the
  reference's own second run (gate 5's rules).

A dimension whose gate did not run says so ("not run"), one without cases "no cases", one whose
cases were all left unjudged "not judged" — never PASS; one whose gate ERRORed (or where the
candidate crashed) shows ERROR (FAIL), whatever its own figures say.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gatekeeper.gates.golden import checks as golden_checks
from gatekeeper.gates.golden.checks import CaseFinding
from gatekeeper.gates.longctx.checks import NEEDLE_GRID, NeedleGridFinding
from gatekeeper.gates.numerics import checks as numerics_checks
from gatekeeper.gates.numerics.checks import DriftFinding
from gatekeeper.gates.shadow import checks as shadow_checks
from gatekeeper.gates.shadow.checks import StageFinding
from gatekeeper.gates.startup.checks import CANARY_CANDIDATE
from gatekeeper.results import CheckResult, GateResult, RunResult, Status, worst_status

DETERMINISTIC = ("short_answer",)
CRASHED = ".candidate_crashed"  # the runner's check when the candidate stopped answering during a gate (run/liveness.py)
STRUCTURED = ("json", "tool_call")


@dataclass(frozen=True, kw_only=True)
class CorrectnessRow:
    """One dimension of the table; `status` is a Status value or "not run"."""

    dimension: str
    metric: str
    threshold: str
    reference: str
    candidate: str
    judged: str
    status: str
    checks: tuple[str, ...]  # the check ids behind the row


def _worst(checks: list[CheckResult]) -> str:
    return worst_status(checks).value if checks else "not run"


def _pct(n: int, d: int) -> str:
    return "–" if d == 0 else f"{n}/{d} ({n / d:.0%})"


def _gate(run: RunResult, gate_id: str) -> GateResult | None:
    g = next((g for g in run.gates if g.id == gate_id), None)
    return g if g is not None and g.coverage is not None else None  # a gate that did not run has no coverage


def _cases(golden: GateResult | None, families: tuple[str, ...]) -> list[CheckResult]:
    if golden is None:
        return []
    return [c for c in golden.checks if c.family in families and not golden_checks.is_streamed(c)]


def _judged(cases: list[CheckResult]) -> str:
    return _pct(sum(1 for c in cases if CaseFinding.of(c).judged), len(cases))


def _streams(golden: GateResult | None, families: tuple[str, ...]) -> list[CheckResult]:
    """The cases' streamed variants (`<case>.stream`): not counted as cases, but a failing one fails the row."""
    return [c for c in golden.checks if c.family in families and golden_checks.is_streamed(c)] if golden else []


def _golden_row(dimension: str, metric: str, threshold: str, golden: GateResult | None, families: tuple[str, ...],
                extra: tuple[CheckResult, ...] = ()) -> CorrectnessRow:
    cases = _cases(golden, families)
    checks = [*extra, *cases, *_streams(golden, families)]
    if golden is None:  # the cases were not run: only the canary can speak, and only against the run
        status = _worst(list(extra)) if any(c.status in (Status.FAIL, Status.ERROR) for c in extra) else "not run"
    else:
        status = "no cases" if not checks else _worst(checks)
    if cases and not any(CaseFinding.of(c).judged for c in cases) and status in ("PASS", "WARN"):
        status = "not judged"  # every case both fail identically (or could not be compared): no blind PASS
    found = [CaseFinding.of(c) for c in cases]
    asked = [f for f in found if not f.lost]
    lost = sorted({f.lost for f in found if f.lost})
    candidate = _pct(sum(f.candidate_passes for f in asked), len(asked))
    if lost:  # cases the candidate could not be asked: its regression (gate 1's FAIL), not a WARN beside it
        status = "ERROR" if status == "ERROR" else "FAIL"
        candidate += f"; {len(found) - len(asked)} not asked: the candidate lost {', '.join(lost)}"
    return CorrectnessRow(dimension=dimension, metric=metric, threshold=threshold,
                          reference=_pct(sum(f.reference_passes for f in asked), len(asked)), candidate=candidate, judged=_judged(cases),
                          status=status, checks=tuple(c.id for c in checks))


def build_table(run: RunResult) -> tuple[CorrectnessRow, ...]:
    """The six rows for `run`."""
    startup, numerics, golden, longctx, shadow = (_gate(run, g) for g in ("startup", "numerics", "golden", "longctx",
                                                                          "shadow"))
    canary = tuple(c for c in (startup.checks if startup else ()) if c.id == CANARY_CANDIDATE)
    rows = [
        _golden_row("Deterministic", "fixed short cases passed (and the canary)", "every case the reference passes",
                    golden, DETERMINISTIC, canary),
        _golden_row("Structured", "JSON / tool-call cases passed", "not below the reference", golden, STRUCTURED),
    ]
    drift = [c for c in (numerics.checks if numerics else ()) if c.id != numerics_checks.COVERAGE]
    nll = next((c for c in drift if c.id == numerics_checks.NLL_DRIFT), None)
    found = DriftFinding.of(nll) if nll is not None else None
    rows.append(CorrectnessRow(
        dimension="Numerical", metric="NLL drift, max |Δ logprob|, NaN/Inf", threshold="within the dtype's tolerance (and the noise floor)",
        reference="–" if found is None else f"noise floor {_num(found.noise_floor)}",
        candidate="–" if found is None else f"NLL drift {_num(found.value)} (limit {_num(found.limit)})",
        judged="–" if numerics is None or numerics.coverage is None else _pct(numerics.coverage.judged, numerics.coverage.total),
        status=_worst(drift), checks=tuple(c.id for c in drift)))
    cases = [c for c in (golden.checks if golden else ()) if golden_checks.is_case(c) or golden_checks.is_streamed(c)]
    degenerate = [c for c in cases if golden_checks.is_degenerate(c)]
    rows.append(CorrectnessRow(
        dimension="Degeneration", metric="answers with repeated tokens, garbage or nothing (golden)", threshold="0 severe degenerations",
        reference="–", candidate=f"{len(degenerate)} of {len(cases)}" if cases else "–",
        judged=_pct(sum(c.status in (Status.PASS, Status.WARN, Status.FAIL) for c in cases), len(cases)) if cases else "–",
        status=("FAIL" if degenerate else "PASS") if cases else "not run", checks=tuple(c.id for c in degenerate)))
    grid = next((c for c in (longctx.checks if longctx else ()) if c.id == NEEDLE_GRID), None)
    g = NeedleGridFinding.of(grid) if grid else NeedleGridFinding()
    rows.append(CorrectnessRow(
        dimension="Long context", metric="needle facts recalled (length × depth grid)", threshold="not below the reference",
        reference=_pct(g.reference_pass, g.cells) if grid else "–", candidate=_pct(g.candidate_pass, g.cells) if grid else "–",
        judged=_pct(g.judged, g.cells) if grid else "–", status=grid.status.value if grid else "not run",
        checks=(grid.id,) if grid else ()))
    rows.append(_shadow_row(shadow))
    gates = {"Deterministic": golden, "Structured": golden, "Numerical": numerics, "Degeneration": golden,
             "Long context": longctx, "Shadow traffic": shadow}
    return tuple(_with_trouble(row, gates[row.dimension]) for row in rows)


def _with_trouble(row: CorrectnessRow, gate: GateResult | None) -> CorrectnessRow:
    """A row whose gate ERRORed (a gate-wide check, not one golden case, whose family's row counts
    it), or where the candidate crashed, shows it: no "Long context PASS" beside a gate-4 ERROR.
    The row's own figures stay; its status becomes ERROR (or FAIL for a crash) and the checks
    behind it include the gate's."""
    trouble = [c for c in (gate.checks if gate else ()) if (c.status is Status.ERROR and c.family is None)
               or (c.status is Status.FAIL and c.id.endswith(CRASHED))]  # a case's own ERROR stays in its family's row
    if not trouble or row.status == Status.ERROR.value:
        return row
    status = Status.ERROR if any(c.status is Status.ERROR for c in trouble) else Status.FAIL
    return replace(row, status=status.value, checks=(*(c.id for c in trouble if c.id not in row.checks), *row.checks))


def _shadow_row(shadow: GateResult | None) -> CorrectnessRow:
    rules = [c for c in (shadow.checks if shadow else ()) if shadow_checks.is_rule(c)]
    stages = [found for c in (shadow.checks if shadow else ()) if shadow_checks.is_stage(c)
              and (found := StageFinding.of(c)).slices]
    dis = stages[-1].disagreement() if stages else None

    def agree(rate: object) -> str:
        return "–" if not isinstance(rate, (int, float)) else f"{1 - rate:.1%} agree"

    judged = "–" if shadow is None or shadow.coverage is None else _pct(shadow.coverage.judged, shadow.coverage.total)
    return CorrectnessRow(dimension="Shadow traffic", metric="replayed requests answered as the reference answers them",
                          threshold="not below the reference's own second run (sequential test, rules)",
                          reference=agree(dis.twin_rate) + " (second run)" if dis else "–",
                          candidate=agree(dis.candidate_rate) if dis else "–", judged=judged,
                          status="not run" if shadow is None else _worst(rules), checks=tuple(c.id for c in rules))


def _num(x: object) -> str:
    return "–" if not isinstance(x, (int, float)) else f"{x:.3g}"
