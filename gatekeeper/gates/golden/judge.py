"""Judging one golden case: the candidate's answer against its assertions and the reference.

Pure logic, no endpoints, so every rule is unit-testable:

- an assertion the candidate passes counts for nothing more;
- a hard failure (empty, degenerate, invalid JSON, non-JSON tool arguments) is FAIL on its own,
  whatever the reference does — unless the reference shows the same failure in every run: then
  the model, not the engine, cannot do the case, and `shared_hard` decides (WARN by default,
  like any case both fail; a policy may make it FAIL);
- any other absolute failure is FAIL (a regression) when the reference passes the same assertion
  in every run, and WARN (noise) when the reference passes it in some runs only;
- a case both fail is still compared (Diffy's rule: the reference's own behaviour is the
  baseline): the candidate answering exactly as the reference does is WARN ("both fail
  identically": the case does not suit this model, not judged); a candidate answer that differs
  from the answer the reference gives in every run is FAIL, a regression; where the reference's
  own runs differ, WARN (reference unstable, not judged);
- a relative failure (equals_reference, similar_to_reference against every reference run) is
  FAIL when the reference agrees with itself, WARN when its own runs disagree (the noise floor);
- client-tolerated protocol deviations (`protocol_warnings`) make the case at least WARN.
The case's status is the worst of these.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gatekeeper.endpoints.chat_types import ToolDefinition
from gatekeeper.golden.answer import answer_key, clip, render_answer
from gatekeeper.golden.assertion_base import Assertion
from gatekeeper.golden.assertions import similarity
from gatekeeper.golden.golden_set import GoldenCase
from gatekeeper.endpoints.responses import ChatResponse
from gatekeeper.gates.golden.checks import STREAM_CUTS, CaseFinding, StreamFinding
from gatekeeper.gates.golden.stream_cuts import is_cut
from gatekeeper.results import Status


@dataclass
class CaseJudgement:
    """A case's status, the reasons behind it (worst first) and what was found (`case` for a case,
    `stream` for its streamed variant: the check's metrics)."""

    status: Status = Status.PASS
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    case: CaseFinding | None = None
    stream: StreamFinding | None = None
    unjudged: str | None = None  # why a WARN finding could not be judged (e.g. "both fail identically")
    divergent_fails: int = 0  # FAIL findings resting only on the candidate's text differing from the reference's
    other_fails: int = 0
    forgiven: bool = False  # a divergence was dropped as a near tie: not every difference counted
    precision_flip: bool = False  # forgiven, though the candidate fails a task the reference passes (forced: a flip)
    undecided: bool = False  # a task lost at a near tie that forcing could not tell from a regression

    def add(self, status: Status, reason: str, unjudged: str | None = None, divergence: bool = False) -> None:
        """Record a finding; the status only ever gets worse. `unjudged` says the finding is a
        WARN because the case could not be judged (and why), not a judged deviation;
        `divergence` marks a FAIL that rests only on the candidate answering differently."""
        self.status = Status.worst((self.status, status))
        if unjudged and status is not Status.FAIL:
            self.unjudged = self.unjudged or unjudged
        if status is Status.FAIL:
            if divergence:
                self.divergent_fails += 1
            else:
                self.other_fails += 1
        self.reasons.append(f"{status.value}: {reason}")

    @property
    def divergent(self) -> bool:
        """Whether the case FAILs only because the candidate's answer differs from the
        reference's (a near tie could explain it; a hard failure could not)."""
        return self.status is Status.FAIL and self.divergent_fails > 0 and self.other_fails == 0

    def forgive(self, note: str) -> None:
        """Drop the divergence FAILs (found to be noise) and keep the rest, with `note`."""
        self.reasons = [r for r in self.reasons if not r.startswith("FAIL:")]
        self.status = Status.worst((Status(r.split(":", 1)[0]) for r in self.reasons), default=Status.PASS)
        self.divergent_fails = 0
        self.forgiven = True
        self.notes.append(note)

    def undecide(self, reason: str, why: str) -> None:
        """Replace the divergence FAILs by an undecided WARN (`reason`; `why`: for coverage): the
        difference could be noise or a regression, and nothing here tells which."""
        self.reasons = [r for r in self.reasons if not r.startswith("FAIL:")]
        self.divergent_fails = 0
        self.undecided = True
        self.add(Status.WARN, reason, unjudged=why)

    def finding(self) -> CaseFinding | StreamFinding | None:
        """What was found: the case's finding, or the streamed answer's."""
        return self.case or self.stream

    @property
    def judged(self) -> bool:
        """Whether the case was judged: a FAIL always is; a WARN that only says "could not
        judge" is not."""
        return self.status is Status.FAIL or self.unjudged is None

    @property
    def reason(self) -> str:
        """One line: the worst findings first."""
        ordered = sorted(self.reasons, key=lambda r: -Status(r.split(":", 1)[0]).severity)
        if ordered or (self.forgiven and self.notes):  # a forgiven failure is not "all assertions pass"
            return "; ".join(ordered + self.notes)
        return "; ".join(["all assertions pass", *self.notes])


def passes_absolute(case: GoldenCase, response: ChatResponse) -> bool:
    """Whether an answer passes every absolute assertion of the case (for pass rates)."""
    tools = list(case.tools) if case.tools else None
    return all(a.check(response, tools).ok for a in case.assertions if not a.relative)


def judge_case(case: GoldenCase, candidate: ChatResponse, references: list[ChatResponse],
               similar_threshold: float, shared_hard: Status = Status.WARN) -> CaseJudgement:
    """Judge the candidate's answer to `case`; `references` are the reference's runs (≥ 1);
    `shared_hard` is the status of a hard failure the reference shares in every run."""
    j = CaseJudgement()
    tools = list(case.tools) if case.tools else None
    failed: list[str] = []
    for a in case.assertions:
        if a.relative:
            _judge_relative(j, a, candidate, references, similar_threshold, failed)
        else:
            _judge_absolute(j, a, candidate, references, tools, failed, shared_hard)
    for w in candidate.protocol_warnings:
        j.add(Status.WARN, f"protocol: {w}")
    ref = references[0] if references else None
    j.case = CaseFinding(
        assertions=len(case.assertions),
        failed=tuple(failed),
        candidate_finish_reason=candidate.finish_reason,
        candidate_tokens=candidate.completion_tokens,
        reference_finish_reason=ref.finish_reason if ref else None,
        reference_tokens=ref.completion_tokens if ref else None,
        similarity=round(similarity(render_answer(candidate), render_answer(ref)), 4) if ref else None,
        reference_self_similarity=(round(similarity(render_answer(references[0]), render_answer(references[1])), 4)
                                   if len(references) > 1 else None),
    )
    return j


def _judge_absolute(j: CaseJudgement, a: Assertion, candidate: ChatResponse, references: list[ChatResponse],
                    tools: list[ToolDefinition] | None, failed: list[str], shared_hard: Status) -> None:
    out = a.check(candidate, tools)
    if out.ok:
        return
    failed.append(a.describe())
    ref_ok = [a.check(r, tools).ok for r in references]
    if ref_ok and not any(ref_ok):
        _both_fail(j, a.type, out.reason, candidate, references, out.hard, shared_hard)
    elif out.hard:
        j.add(Status.FAIL, f"{a.type}: {out.reason}")
    elif ref_ok and all(ref_ok):
        j.add(Status.FAIL, f"regression, the reference passes {a.type}: {out.reason}", divergence=True)
    else:
        j.add(Status.WARN, f"the reference passes {a.type} in only {sum(ref_ok)} of {len(ref_ok)} runs (noise): {out.reason}",
              "reference unstable")


def _both_fail(j: CaseJudgement, kind: str, reason: str, candidate: ChatResponse, references: list[ChatResponse],
               hard: bool, shared_hard: Status) -> None:
    """Both miss an absolute assertion: compare the candidate with what the reference answered."""
    cand = render_answer(candidate)
    refs = [render_answer(r) for r in references]
    if cand in refs:
        if hard:
            j.add(shared_hard, f"{kind}: {reason} (the reference fails it too, identically)", "both fail identically")
        else:
            j.add(Status.WARN, f"case does not suit this model (reference fails too), both answer identically: {kind}: {reason}",
                  "both fail identically")
    elif len(set(refs)) == 1:
        j.add(Status.FAIL, f"regression: both miss {kind}, but the candidate's answer differs from the one the reference "
                           f"gives in every run ({len(refs)}): {reason}", divergence=not hard)
    else:
        j.add(Status.WARN, f"both miss {kind} and the reference's own runs differ (reference unstable): {reason}",
              "reference unstable")


def _judge_relative(j: CaseJudgement, a: Assertion, candidate: ChatResponse, references: list[ChatResponse],
                    threshold: float, failed: list[str]) -> None:
    if not references:
        return
    outs = [a.compare(candidate, r, threshold) for r in references]
    if any(o.ok for o in outs):
        return
    failed.append(a.describe())
    if len(references) > 1 and not a.compare(references[1], references[0], threshold).ok:
        j.add(Status.WARN, f"{a.type}: {outs[0].reason}, but the reference disagrees with itself too (noise floor)",
              "reference unstable")
    else:
        runs = f"agrees with itself across {len(references)} runs" if len(references) > 1 else "has one run (no noise floor)"
        j.add(Status.FAIL, f"{a.type}: {outs[0].reason}; the reference {runs}", divergence=True)


def stream_quirk(case: GoldenCase, streamed: ChatResponse, plain: ChatResponse,
                 finish_reasons: bool = True) -> tuple[str, ...]:
    """How one target's streamed answer differs from its non-streamed answer to the same case:
    () when they agree; else the differing parts ("answer" and/or "finish_reason X vs Y"), so two
    targets' differences can be compared as quirks. `finish_reasons=False` leaves finish reasons
    out (a server whose streams carry none)."""
    quirk: list[str] = []
    if answer_key(streamed, case.expects_json) != answer_key(plain, case.expects_json):
        quirk.append("answer")
    if finish_reasons and streamed.finish_reason != plain.finish_reason:
        quirk.append(f"finish_reason {streamed.finish_reason!r} vs {plain.finish_reason!r}")
    return tuple(quirk)


def judge_stream(case: GoldenCase, streamed: ChatResponse, plain: ChatResponse,
                 reference_pair: tuple[ChatResponse, ChatResponse] | None = None,
                 reference_noisy: bool = False, finish_reasons: str | None = None, cuts_shared: bool = False) -> CaseJudgement:
    """Judge a streamed answer against the same endpoint's non-streamed answer to the same case:
    tool names and decoded arguments, and decoded JSON for JSON cases, must be equal.
    `reference_pair` is the reference's (streamed, plain) answers when available;
    `reference_noisy` says the reference's own non-streamed runs differ on this case.

    Parity is reference-relative: a difference the reference's stream shows too, the same way
    (the same parts differ, the same finish reasons), is the server's protocol quirk, a WARN that
    names it; a difference only the candidate shows, or a different one, is a regression.
    `cuts_shared`: both targets cut streams short at random (stream_cuts.py); a cut stream is then
    a WARN judged by the two rates (`golden.stream_cuts`), not here."""
    j = CaseJudgement()
    broken = [c for c in streamed.tool_calls if not isinstance(c.parsed, dict)]
    for c in broken:
        j.add(Status.FAIL, f"streamed tool call {c.name!r} has arguments that are not a JSON object: {clip(c.arguments)}")
    compare_finish = finish_reasons is None
    quirk = stream_quirk(case, streamed, plain, compare_finish)
    ref_quirk = stream_quirk(case, *reference_pair, compare_finish) if reference_pair is not None else None
    if not compare_finish:
        j.notes.append(f"finish reasons not compared: {finish_reasons}")
    j.stream = StreamFinding(streamed_calls=len(streamed.tool_calls), plain_calls=len(plain.tool_calls),
                             streamed_finish_reason=streamed.finish_reason, plain_finish_reason=plain.finish_reason,
                             similarity=round(similarity(render_answer(streamed), render_answer(plain)), 4),
                             stream_difference=quirk, reference_stream_difference=ref_quirk)
    if quirk and not broken:
        what = f"the streamed answer differs from the non-streamed one ({'; '.join(quirk)})"
        if cuts_shared and is_cut(streamed, plain):
            j.add(Status.WARN, f"protocol: the stream was cut short (no finish_reason, {len(streamed.text)} of "
                  f"{len(plain.text)} characters); both targets cut streams at random: judged as a rate by {STREAM_CUTS}",
                  "stream cut short (judged as a rate)")
        elif ref_quirk == quirk:
            j.add(Status.WARN, f"protocol: {what}, exactly as the reference's stream differs from its own "
                  f"non-streamed answer (a quirk of the server, not a regression)", "reference's stream differs too")
        elif ref_quirk:
            j.add(Status.FAIL, f"{what}; the reference's stream differs too, but not the same way ({'; '.join(ref_quirk)})")
        elif reference_noisy:
            j.add(Status.WARN, f"{what}, but the reference disagrees with itself on this case (noise floor)", "reference unstable")
        else:
            j.add(Status.FAIL, what)
    for w in streamed.protocol_warnings:
        j.add(Status.WARN, f"protocol: {w}")
    return j
