"""Per-pair measures: one replayed request, the candidate's answer beside the reference's and
beside the reference's second answer (its twin, the noise floor).

Every binary measure is taken twice — on the candidate and on the twin, each against the
reference's first answer — so that the analysis compares the candidate with another run of the
reference, never with an ideal (Diffy's primary/secondary/candidate rule):

- `disagreement`: the answer differs from the reference's (stripped text, tool names, decoded
  arguments; decoded JSON where JSON was asked for or the reference answered JSON). A greedy
  answer that gate 5's token review (`review.py`) found to part from the reference's at a near
  tie, or to be the same tokens rendered differently, is no disagreement — the candidate's and
  the twin's alike: both are reviewed by the same rule;
- `near_tie`: the answer parts from the reference's at a near tie (forgiven by the review). Each
  near tie is forgiven, their rate is not: a candidate that shifts every close call toward the
  runner-up (a kernel's systematic bias) parts at a near tie on many answers, the twin on few.
  Judged over all greedy traffic, not per slice (a numerical path's rate, not a tenant's);
- `task_failure`: the request's checkable outcome failed (`task.py`): JSON asked and not valid
  (against the json_schema where given), a tool call expected and none valid, a refusal where the
  reference answered, not the `expected` answer where the traffic gives one;
- `degeneration`: empty, looping, one symbol repeated, U+FFFD (gate 3's detector);
- `json_parse`: JSON that does not parse (or breaks the request's json_schema), where the request
  asked for JSON (`response_format`) or the reference answered with JSON;
- `tool_parse`: where the request offers tools and the reference called one: no call, a call to
  a tool not offered, arguments that are not a JSON object or break the tool's schema;
- `error`: the request failed (HTTP error, timeout, malformed answer);
- `retry`: the request was not answered at the first attempt — the server said 502/503/504
  and it was sent again (the client's retries, which turn a per-attempt failure rate p into about
  p³ failed requests), or it failed: a candidate needing many more retries is a finding even
  when every request ends answered;
- `nonfinite`: a returned logprob was NaN or infinite (only where logprobs came back);
- `finish_reason`: a finish reason other than the reference's; `refusal`: a refusal where the
  reference answered.

Continuous: `similarity` to the reference's answer (difflib ratio; 1.0 when equal), the length
ratio (completion tokens over the reference's), the first divergence, and latencies (reported
here, judged by the performance gate).
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, replace
from typing import Any

from gatekeeper.json_types import JsonObject
from gatekeeper.traffic.answers import Answer
from gatekeeper.traffic.task import NOT_JSON, Task, json_schema_of, parsed_json, refused, valid_calls, valid_json
from gatekeeper.golden.call_order import CANONICAL_NOTE, in_canonical_order
from gatekeeper.golden.degeneration import find_degeneration
from gatekeeper.text import first_divergence
from gatekeeper.traffic.format import TrafficRecord

BINARY = ("disagreement", "task_failure", "degeneration", "json_parse", "tool_parse", "error", "retry", "nonfinite", "near_tie",
          "finish_reason", "refusal")
"""The binary measures, each observed on the candidate and on the twin."""

# Why a candidate answer that differs from the reference's is no disagreement (set by gate 5's
# token review, gates/shadow/review.py): one generation two servers render differently, or a near tie.
SAME_TOKENS = "same tokens, rendered differently"
NEAR_TIE = "differs at a near tie"


@dataclass(frozen=True, kw_only=True)
class Pair:
    """One replayed request and its answers. `wants_json`: the request asked for JSON;
    `tools`: the tools it offered (None: none); `twin`: the reference's second answer (None
    when the noise floor was not measured for it); `sampled`: temperature above 0;
    `wants_logprobs`: the request asked for logprobs; `json_schema`: the schema of its
    json_schema response_format; `expected`: the exact answer its traffic record gives
    (`with_task` sets these two from the record)."""

    id: str
    tenant: str
    kind: str
    model_alias: str
    wants_json: bool
    tools: tuple[dict[str, Any], ...] | None
    candidate: Answer
    reference: Answer
    twin: Answer | None
    sampled: bool = False
    wants_logprobs: bool = False
    reviewed: str | None = None  # why a candidate answer that differs is no disagreement (gates/shadow/review.py)
    twin_reviewed: str | None = None  # the same for the twin's answer, reviewed by the same rule
    json_schema: dict[str, Any] | None = None
    expected: str | None = None

    def to_dict(self) -> JsonObject:
        """JSON-ready form (records, the pair store)."""
        return {"id": self.id, "tenant": self.tenant, "kind": self.kind, "model_alias": self.model_alias,
                "wants_json": self.wants_json, "tools": list(self.tools) if self.tools is not None else None,
                "candidate": self.candidate.to_dict(), "reference": self.reference.to_dict(),
                "twin": self.twin.to_dict() if self.twin is not None else None, "sampled": self.sampled,
                "wants_logprobs": self.wants_logprobs, **({"reviewed": self.reviewed} if self.reviewed else {}),
                **({"twin_reviewed": self.twin_reviewed} if self.twin_reviewed else {}),
                **({"json_schema": self.json_schema} if self.json_schema is not None else {}),
                **({"expected": self.expected} if self.expected is not None else {})}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Pair:
        """The inverse of `to_dict`."""
        twin = d.get("twin")
        return cls(id=str(d["id"]), tenant=str(d.get("tenant") or "default"), kind=str(d.get("kind") or "chat"),
                   model_alias=str(d.get("model_alias") or ""), wants_json=bool(d.get("wants_json")),
                   tools=tuple(d["tools"]) if d.get("tools") is not None else None, candidate=Answer.from_dict(d["candidate"]),
                   reference=Answer.from_dict(d["reference"]), twin=Answer.from_dict(twin) if twin is not None else None,
                   sampled=bool(d.get("sampled")), wants_logprobs=bool(d.get("wants_logprobs")), reviewed=d.get("reviewed") or None,
                   twin_reviewed=d.get("twin_reviewed") or None, json_schema=d.get("json_schema"), expected=d.get("expected"))


@dataclass(frozen=True, kw_only=True)
class Measures:
    """A pair's measures. `judged` is False when the reference failed (or no twin was asked):
    the pair says nothing about the candidate; a failed twin counts like a failed candidate.
    `bad[m]` is (candidate bad, twin bad) per binary measure that applies to this pair
    (json_parse only for JSON pairs, tool_parse only for tool pairs, task_failure only where the
    request's task has a check); `task` the task checks (`task.py`) the candidate and the twin failed."""

    judged: bool
    why_not: str
    bad: dict[str, tuple[bool, bool]]
    similarity: float
    twin_similarity: float
    length_ratio: float | None
    twin_length_ratio: float | None
    divergence: int | None
    task: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())


def _key(a: Answer, as_json: bool) -> Any:
    calls = tuple((name, _decoded(args)) for name, args in a.calls)
    text: Any = a.text.strip()
    if as_json:
        parsed = parsed_json(a.text)
        text = json.dumps(parsed, sort_keys=True) if parsed is not NOT_JSON else text
    return text, calls


def _decoded(args: str) -> Any:
    try:
        return json.dumps(json.loads(args), sort_keys=True)
    except ValueError:
        return ("<not json>", args)


def render(a: Answer) -> str:
    """Text then tool calls, one per line (what similarity and the first divergence are computed on)."""
    return "\n".join([a.text.strip(), *(f"{n}({args})" for n, args in a.calls)]).strip()


def render_pair(reference: Answer, candidate: Answer) -> tuple[str, str]:
    """Both answers as `render` renders them, for the report's side-by-side text: where both made
    more than one call, the calls in canonical order on both sides, and a last line saying so when
    that moved any (`golden/call_order.py`), so a pure order swap shows no difference."""
    ref_calls, cand_calls, moved = in_canonical_order(reference.calls, candidate.calls, lambda c: c)
    note = [CANONICAL_NOTE] if moved else []

    def shown(a: Answer, calls: list[tuple[str, str]]) -> str:
        return "\n".join([a.text.strip(), *(f"{n}({args})" for n, args in calls), *note]).strip()

    return shown(reference, ref_calls), shown(candidate, cand_calls)


def similarity(a: str, b: str) -> float:
    """difflib's ratio without the junk heuristic; 1.0 for equal strings (cheap path)."""
    return 1.0 if a == b else difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def _answered_json(a: Answer) -> bool:
    text = a.text.strip()
    return bool(text) and text[0] in "{[" and parsed_json(text) is not NOT_JSON


def _ratio(a: Answer, ref: Answer) -> float | None:
    if a.tokens is None or ref.tokens is None or ref.tokens <= 0:
        return None
    return a.tokens / ref.tokens


def disagrees(p: Pair) -> bool:
    """Whether the candidate's answer differs from the reference's as `disagreement` compares them."""
    as_json = p.wants_json or _answered_json(p.reference)
    return _key(p.candidate, as_json) != _key(p.reference, as_json)


def measure(p: Pair) -> Measures:
    """The measures of one pair."""
    ref, cand = p.reference, p.candidate
    if ref.failed or p.twin is None:
        why = "reference request failed" if ref.failed else "noise floor not measured"
        return Measures(judged=False, why_not=why, bad={}, similarity=0.0, twin_similarity=0.0, length_ratio=None, twin_length_ratio=None,
                        divergence=None)
    # A twin that failed is scored exactly as a candidate that failed (error, disagreement...):
    # dropping those pairs instead would measure the candidate's transient failures against a twin
    # that by construction has none, and every server has some (a 2% shared rate of 503s was a
    # false ROLLBACK in three runs of four).
    twin = p.twin
    as_json = p.wants_json or _answered_json(ref)
    want = _key(ref, as_json)
    bad: dict[str, tuple[bool, bool]] = {}

    # The same generation: parser and finish-reason differences are rendering (per side, the review being symmetric).
    alike = (p.reviewed == SAME_TOKENS, p.twin_reviewed == SAME_TOKENS)

    def both(name: str, test: Any, reviewed: tuple[bool, bool] = (False, False)) -> None:
        bad[name] = (bool(test(cand)) and not reviewed[0], bool(test(twin)) and not reviewed[1])

    both("error", lambda a: a.failed)
    both("retry", lambda a: a.failed or a.retries > 0)
    both("disagreement", lambda a: a.failed or _key(a, as_json) != want, (p.reviewed is not None, p.twin_reviewed is not None))
    if not p.sampled:  # each near tie is forgiven, their rate is not (only greedy answers are reviewed)
        bad["near_tie"] = (p.reviewed == NEAR_TIE, p.twin_reviewed == NEAR_TIE)
    task = task_of(p)
    # The same generation rendered differently: a tool-call parser's choice is not the engine's lost task.
    def failures(a: Answer, same: bool) -> tuple[str, ...]:
        return tuple(c for c in task.failures(a) if not (same and c == "tool_call"))
    failed = (failures(cand, alike[0]), failures(twin, alike[1]))
    if task.checks:
        bad["task_failure"] = (bool(failed[0]), bool(failed[1]))
    both("degeneration", lambda a: not a.failed and find_degeneration(render(a)) is not None)
    if as_json:
        both("json_parse", lambda a: a.failed or not valid_json(a.text, p.json_schema))
    if p.tools and ref.calls:
        tools = p.tools
        both("tool_parse", lambda a: a.failed or not valid_calls(a, tools), alike)
    if cand.nonfinite or twin.nonfinite or ref.nonfinite:
        both("nonfinite", lambda a: a.nonfinite)
    both("finish_reason", lambda a: not a.failed and a.finish_reason != ref.finish_reason, alike)
    if not refused(ref):
        both("refusal", refused)
    r_ref = render(ref)
    r_cand = render(cand)
    return Measures(judged=True, why_not="", bad=bad, similarity=0.0 if cand.failed else similarity(r_cand, r_ref),
                    twin_similarity=0.0 if twin.failed else similarity(render(twin), r_ref), length_ratio=_ratio(cand, ref),
                    twin_length_ratio=_ratio(twin, ref), divergence=None if cand.failed else first_divergence(r_ref, r_cand), task=failed)


def with_task(p: Pair, record: TrafficRecord) -> Pair:
    """The pair with what its traffic record says of the task beyond the pair's fields: the
    json_schema's schema and the expected answer."""
    schema = json_schema_of(record.request)
    if schema is None and record.expected is None:
        return p
    return replace(p, json_schema=schema, expected=record.expected)


def task_of(p: Pair) -> Task:
    """What the pair's request can be checked for (`task.py`): JSON where it asked for JSON, a
    valid tool call where it offers tools and the reference called one, no refusal where the
    reference answered, the expected answer where its record gives one."""
    return Task(p.wants_json, p.json_schema, p.tools if p.tools and p.reference.calls else None,
                not refused(p.reference), p.expected)
