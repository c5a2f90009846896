"""The automatic rollback conditions (docs/bug-classes.md#rollback-conditions) as named rules, each a
check `shadow.rule.<name>` with its evidence. Every one is blocking under the default policy.

These six are judged on the replayed pairs (the slices' critical measures, `analysis.py`), each
against the reference's own second run on the same requests (the three read from the earlier
gates' checks are the gate's: `gatekeeper/gates/shadow/earlier_rules.py`):

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
  at the first differing token. And (measure `near_tie`) greedy answers that part at a near tie:
  each is forgiven, their rate is judged — a kernel that shifts every close call toward the
  runner-up parts so on most answers, the twin on few;
- `structured_parse_drop` (`json_parse`, `tool_parse`): JSON or tool calls stop parsing /
  validating against their schemas;
- `garbage_rate_up` (`degeneration`, `nonfinite`): degenerate output, NaN/Inf logprobs;
- `errors_up` (`error`): requests the reference answers and the candidate fails;
- `retries_up` (`retry`): requests not answered at the first attempt — the server said
  502/503/504 and the client sent them again, or they failed. Retries hide a per-attempt
  failure rate p as about p³ failed requests; this counts the attempts the candidate needed.

A rule whose evidence does not exist in this run (no JSON or tool requests were replayed) is a
SKIP saying so, never a PASS. A rule fires when a measure is beyond the twin's noise (its sequential test) with the excess seen
above its materiality (`analysis.py`). A rule that did not fire states what it rules out: the anytime 95%
upper bound of the candidate's excess over the twin on its measures over all traffic
(`excess_bound.py`), beside each measure's materiality; a bound wider than the materiality makes
the PASS undecided (`detection.rule`), with about how many judged pairs would decide it. A
measure whose crossing was real but certainly smaller than its materiality WARNs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gatekeeper.detection import DetectionLimit
from gatekeeper.traffic.analysis import MetricResult, SliceResult
from gatekeeper.traffic.excess_bound import LEVEL, pairs_to_decide
from gatekeeper.results import Status

TASK_SUCCESS_DOWN = "task_success_down"
ANSWERS_DIFFER = "answers_differ"
PAIR_RULES: dict[str, tuple[str, ...]] = {
    TASK_SUCCESS_DOWN: ("task_failure",),
    ANSWERS_DIFFER: ("disagreement", "near_tie"),
    "structured_parse_drop": ("json_parse", "tool_parse"),
    "garbage_rate_up": ("degeneration", "nonfinite"),
    "errors_up": ("error",),
    "retries_up": ("retry",),
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
    "retry": "requests retried after a 502/503/504, or failed",
    "near_tie": "greedy answers that part from the reference's at a near tie",
}
"""What each critical measure counts, as a rule's reason says it."""


@dataclass(frozen=True)
class RuleOutcome:
    """One rule's status, reason and the figures behind it."""

    name: str
    status: Status
    reason: str
    evidence_rows: tuple[tuple[str, ...], ...] = ()
    limit: DetectionLimit | None = None  # a PASS's: the least ruled-out of its measures' bounds
    to_decide: int | None = None  # a PASS whose bound is wider than the materiality: judged pairs that would decide it
    decide: str = ""  # and that, in words (or why more pairs may not)

    @property
    def undecided(self) -> bool:
        """A PASS whose bound is wider than its materiality: not fired, and not ruled out either."""
        return self.status is Status.PASS and self.limit is not None and not self.limit.within_materiality


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
    overall = [m for s in slices if s.key == "all" for m in s.metrics if m.name in measures and m.eligible]
    small = [(s.key, m) for s in slices for m in s.metrics if m.name in measures and m.label == "Immaterial"]
    limit, to_decide = _limit(overall)
    what = "; ".join(f"{m} ({MEASURES[m]})" for m in measures)
    if small and (limit is None or limit.within_materiality):  # an undecided bound is not hidden behind a WARN
        key, m = small[0]
        return RuleOutcome(name, Status.WARN, f"{m.name} ({MEASURES[m.name]}) in {key} beyond the twin's noise but within "
                           f"its materiality: the candidate {m.candidate_rate:.1%} vs the twin {m.twin_rate:.1%} of "
                           f"{m.eligible} pairs, excess at most +{(m.upper or 0.0) * 100:.1f} points (materiality "
                           f"{(m.materiality or 0.0) * 100:.1f})", limit=limit)
    below = [f"{s.key} {m.name} (the candidate {m.candidate_rate:.1%} vs the twin {m.twin_rate:.1%})" for s in slices
             for m in s.metrics if m.name in measures and m.label == "Below materiality"]
    reason = (f"not fired: {what}: " + (f"beyond the twin's noise but estimated below its materiality in {', '.join(below)}"
                                         if below else "no excess over the reference's twin beyond chance")
              + f" in {judged} judged measurements (every slice)")
    decide = ""
    if to_decide is not None:
        decide = f"about {to_decide} judged pairs would decide it at the rates seen"
    elif limit is not None and not limit.within_materiality:
        decide = "the excess seen is itself near the materiality: more pairs may not decide it"
    return RuleOutcome(name, Status.PASS, reason + (f"; {stopped}" if stopped else ""), limit=limit, to_decide=to_decide,
                       decide=decide)


def _limit(overall: Sequence[MetricResult]) -> tuple[DetectionLimit | None, int | None]:
    """The rule's detection limit over all traffic: the bound of the measure furthest beyond (or
    least within) its materiality; and, when that bound is wider than the materiality, about how
    many judged pairs would bring it within."""
    bounded = [m for m in overall if m.upper is not None and m.materiality is not None]
    if not bounded:
        return None, None
    worst = max(bounded, key=lambda m: (m.upper or 0.0) - (m.materiality or 0.0))
    upper, margin = worst.upper or 0.0, worst.materiality or 0.0
    limit = DetectionLimit(max(0.0, upper), MEASURES[worst.name], "excess", 1.0 - LEVEL, margin, worst.eligible)
    return limit, pairs_to_decide(*worst.counts, margin) if upper > margin else None


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


def undecided(slices: Sequence[SliceResult]) -> list[str]:
    """The pair rules that did not fire and whose bound is still wider than their materiality."""
    return [name for name in PAIR_RULES if pair_rule(name, slices).undecided]
