"""Per-request features in full batches: `longctx.batch_features`.

A request carries state of its own through the scheduler — a sampling seed, logprobs, `n`
choices, stop strings, a grammar, tool parsing — and that state is where schedulers break when
they split or batch the request: vLLM's CPU engine core dies ("CPU Generator does not use
offset") when a seeded, sampled request's prefill is split by chunked prefill in a full token
budget, because rewinding a discarded token's generator works only for CUDA generators (0.32.0
in every such batch, 0.31.0 in about half). Ordinary traffic meets that condition by chance (a
run catches it by luck); this check sets it up on purpose, as the session-decay check sets up
the KV-reuse bug's trigger conditions.

For each feature, on each target (both at once, each on its own server; fresh launches of both
where one is an engine gatekeeper launches from a command, the bundled pair itself, a URL target
only where the policy says so): `COPIES` copies of the feature request — a long needle prompt of
`batch_prompt_share` of the context — are sent at the same instant as `fillers` other prompts of
that length, interleaved (filler, feature, filler, feature, …), each with a label of its own at
the start so that nothing comes from a prefix cache; then each copy is sent again alone. Each
prompt nearly fills the batch's token budget (`batch_tokens`, 0: the context length; vLLM's CPU
default), so a scheduler that admits them first come, first served prefills the first whole and
splits every later one across steps (chunked prefill: each step finishes one prompt and starts
the next): whatever order they arrive in, at least one copy is split. The same request on the
same server must answer the same both ways: greedy is deterministic, and a seed fixes a sample.

- FAIL: a feature request the candidate answers alone but fails in the full batch (an HTTP 500,
  a dropped connection, an engine that died), where the reference answered it both ways and in
  `REFERENCE_REPEATS` more full batches of it (a crash that needs a lucky batch is the
  reference's too: vLLM 0.31.0 dies in about half of them, 0.32.0 in every one) — the
  first such feature is named with its batch condition; features after an engine's death are not
  judged (the death is the finding; gatekeeper/endpoints/dead.py names it).
- WARN: every judged feature answered both ways, but the candidate's answer changed in the batch
  for some feature where the reference's did not (numerics of split prefill can move a near tie;
  stated, not decided).
- PASS: every judged feature gave the candidate the same answer alone and in the full batch.
- WARN also when both targets fail a feature in the batch: a bug the reference has too (vLLM
  0.31.0 dies as 0.32.0 does), named, not judged, not a regression.
- WARN too when both targets' engines die of one root cause in this check (`engine_death`: their
  logs' first exception, numbers blanked), the candidate's on a feature the reference had answered,
  the reference's on a later one: where a lucky batch kills the reference's build too (vLLM
  0.31.0's), which feature it meets first is chance; a defect both share, named, not judged.
- Not judged (SKIP, undecided when nothing was judged): a feature a target refuses
  (capability), or that the reference also fails in the batch.
"""

from __future__ import annotations

import random
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gatekeeper.endpoints import engine_death
from gatekeeper.endpoints.client import Endpoint
from gatekeeper.errors import EndpointError, refused_alike
from gatekeeper.evidence import Table
from gatekeeper.gates.interface import GateContext
from gatekeeper.gates.longctx.prompts import NeedlePrompt, needle_prompts
from gatekeeper.gates.longctx.checks import BATCH_FEATURES, BatchFeaturesFinding
from gatekeeper.gates.longctx.settings import LongContextSettings
from gatekeeper.gates.longctx.tokens import TokenCounter
from gatekeeper.gates.longctx.traffic import both
from gatekeeper.endpoints.responses import ChatResponse
from gatekeeper.results import Judgement, Status
from gatekeeper.detection import exact

SEED = 1234
UNJUDGED = "not judged: "
REFERENCE_FAILS = UNJUDGED + "reference fails too"
SHARED_DEATH = UNJUDGED + "both engines died of it"
COPIES = 2  # copies of the feature request in each batch: only one prompt of a batch can escape the split
REFERENCE_REPEATS = 10  # a reference failing a batch in 4 of 10 (p=0.4) survives all ten 0.6% of the time
_SCHEMA = {"type": "json_schema", "json_schema": {"name": "answer", "schema": {
    "type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"], "additionalProperties": False}}}
_TOOL = [{"type": "function", "function": {"name": "lookup_secret", "description": "Look up a secret by its kind.",
                                           "parameters": {"type": "object", "properties": {"kind": {"type": "string"}},
                                                          "required": ["kind"]}}}]


@dataclass(frozen=True)
class Feature:
    """One request feature: its name as the report says it, and the chat arguments that carry it."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)


FEATURES = (  # the seeded ones last: a feature that kills an engine leaves the others judged
    Feature("greedy (control)", {"temperature": 0.0}),
    Feature("logprobs", {"temperature": 0.0, "logprobs": True, "top_logprobs": 5}),
    Feature("stop strings", {"temperature": 0.0, "stop": [".", "\n\n"]}),
    Feature("json_schema grammar", {"temperature": 0.0, "extra": {"response_format": _SCHEMA}}),
    Feature("tools", {"temperature": 0.0, "tools": _TOOL, "tool_choice": "auto"}),
    Feature("seeded sampling", {"temperature": 0.8, "seed": SEED}),
    Feature("n=2 seeded", {"temperature": 0.8, "seed": SEED, "extra": {"n": 2}}),
)

Answer = ChatResponse | EndpointError


@dataclass(frozen=True)
class Outcome:
    """One feature on one target: each copy's answer in the full batch, then the same request alone."""

    batched: tuple[Answer, ...]
    alone: tuple[Answer, ...]
    dead: bool = False  # the target's engine was dead after this feature (its errors are no refusal)
    repeats: int = 0  # the reference only: more full batches of a feature the candidate failed
    repeat_error: EndpointError | None = None  # the first of those the reference failed

    def refusal(self) -> EndpointError | None:
        """A refusal of the feature (the server does not serve it: a 4xx, or 501), alone or batched."""
        return next((a for a in (*self.alone, *self.batched) if isinstance(a, EndpointError) and a.refusal), None)

    def batch_error(self) -> EndpointError | None:
        """The first copy that failed in the batch (or in a repeat of it)."""
        return next((a for a in self.batched if isinstance(a, EndpointError)), self.repeat_error)

    def alone_error(self) -> EndpointError | None:
        """The first copy that failed alone."""
        return next((a for a in self.alone if isinstance(a, EndpointError)), None)

    def same(self) -> bool:
        """Whether every copy answered in the batch as it did alone (all answered)."""
        return all(_form(b) == _form(a) for b, a in zip(self.batched, self.alone))


def _ask(ep: Endpoint, prompt: NeedlePrompt, feature: Feature, max_tokens: int) -> Answer:
    try:
        return ep.chat(prompt.messages, max_tokens=max_tokens, **feature.args)
    except EndpointError as e:
        return e


def _form(a: Answer) -> tuple[str, tuple[tuple[str, str], ...]]:
    assert not isinstance(a, EndpointError)
    return a.text.strip(), tuple((c.name, c.arguments) for c in a.tool_calls)


def variant(prompt: NeedlePrompt, tag: str) -> NeedlePrompt:
    """The prompt with a label of its own first ("Case 3.1."), so that no two requests of the check
    share a cached prefix: a prefix-cache hit would spare the prefill that is to be split."""
    *head, last = prompt.messages
    return replace(prompt, messages=[*head, {**last, "content": f"Case {tag}. {last['content']}"}])


def _batch(ep: Endpoint, prompt: NeedlePrompt, fillers: list[NeedlePrompt], feature: Feature, tag: str,
           max_tokens: int) -> tuple[list[NeedlePrompt], tuple[Answer, ...]]:
    """One full batch of `feature`: its copies and their answers (labels `tag`: nothing shared with
    any other request of the check)."""
    copies = [variant(prompt, f"{tag}.{k + 1}") for k in range(COPIES)]
    order: list[tuple[NeedlePrompt, Feature]] = []
    for i in range(max(len(fillers), COPIES)):  # filler, feature, filler, feature, …
        order += [(variant(fillers[i], f"{tag}.{i + 1} filler"), FEATURES[0])] if i < len(fillers) else []
        order += [(copies[i], feature)] if i < COPIES else []
    with ThreadPoolExecutor(len(order)) as pool:
        futures = [pool.submit(_ask, ep, p, f, max_tokens) for p, f in order]
    by_prompt = {id(p): fut.result() for fut, (p, _) in zip(futures, order)}
    return copies, tuple(by_prompt[id(c)] for c in copies)


def _drive(ep: Endpoint, prompt: NeedlePrompt, fillers: list[NeedlePrompt], max_tokens: int) -> list[Outcome]:
    """Each feature in a full batch of prompts no earlier request shares (so nothing comes from a
    prefix cache), then each copy alone: the answer it gives with its prefill whole."""
    out = []
    for fi, feature in enumerate(FEATURES):
        copies, batched = _batch(ep, prompt, fillers, feature, str(fi + 1), max_tokens)
        alone = tuple(_ask(ep, c, feature, max_tokens) for c in copies)
        out.append(Outcome(batched, alone, dead=ep.streak.confirm() is not None))
    return out


def _reference_again(ep: Endpoint, prompt: NeedlePrompt, fillers: list[NeedlePrompt], feature: Feature,
                     max_tokens: int) -> tuple[int, EndpointError | None]:
    """The batch the candidate failed, sent to the reference up to `REFERENCE_REPEATS` more times (new
    labels each time), stopping at its first failure: how many were sent, and that failure. A
    crash that needs a lucky batch (vLLM 0.31.0's, about half the time) is the reference's too."""
    for k in range(REFERENCE_REPEATS):
        _, answers = _batch(ep, prompt, fillers, feature, f"{FEATURES.index(feature) + 1}.again{k + 1}", max_tokens)
        error = next((a for a in answers if isinstance(a, EndpointError)), None)
        if error is not None:
            return k + 1, error
    return REFERENCE_REPEATS, None


def run(ctx: GateContext, s: LongContextSettings, counter: TokenCounter, context: int, max_prompt: int) -> None:
    """Drive both targets and record `longctx.batch_features`."""
    t0 = time.perf_counter()
    budget = s.batch_tokens or context
    length = max(16, min(max_prompt, int(context * s.batch_prompt_share)))
    fillers_n = max(s.batch_fillers, -(-budget // length))  # enough to fill the budget once more
    rng = random.Random(f"{ctx.run.seed}:longctx:batch")
    prompt = needle_prompts(counter, rng, length, [0.5])[0]
    fillers = [needle_prompts(counter, rng, length, [0.5])[0] for _ in range(fillers_n)]
    ctx.progress(f"longctx: {len(FEATURES)} request features in full batches and alone "
                 f"({fillers_n} + {COPIES} prompts of {length} tokens, a {budget}-token budget)")
    targets = _copies(ctx)
    if targets is None:
        return
    reference, candidate = targets
    ref, cand = both(lambda ep: _drive(ep, prompt, fillers, s.answer_tokens), reference, candidate)
    for i, (r, c) in enumerate(zip(ref, cand)):  # the candidate failed where the reference did not: can the reference?
        if c.batch_error() is not None and c.refusal() is None and r.batch_error() is None and r.refusal() is None \
                and reference.streak.confirm() is None:
            ctx.progress(f"longctx: the candidate failed {FEATURES[i].name} in a full batch; the reference gets up to "
                         f"{REFERENCE_REPEATS} more")
            n, error = _reference_again(reference, prompt, fillers, FEATURES[i], s.answer_tokens)
            ref[i] = replace(r, repeats=n, repeat_error=error)
    condition = (f"{COPIES} copies of its {prompt.tokens}-token prompt sent at once with {fillers_n} others of "
                 f"{length} tokens into a {budget}-token batch budget (prefill split by chunked prefill, or queued)")
    died = candidate.streak.confirm() is not None  # its engine died: what failed after the first is its consequence
    if reference.streak.confirm() is not None:
        ctx.notes.append(f"longctx: {reference.role}'s engine died in the batch-features check: the reference has the bug too")
    cause = _died_of(candidate)
    _judge(ctx, ref, cand, condition, budget, length, fillers_n, t0, died,
           cause if cause is not None and cause == _died_of(reference) else None)


def _died_of(ep: Endpoint) -> str | None:
    """The root cause (its `engine_death.signature`) a launched copy whose engine died in this check
    printed to its log; None when it lives, has no log (a URL target) or printed none."""
    path = getattr(ep, "log_path", None)
    if ep.streak.confirm() is None or path is None:
        return None
    try:
        cause = engine_death.root_cause(Path(path).read_text(encoding="utf-8", errors="replace").splitlines())
    except OSError:
        return None
    return None if cause is None else engine_death.signature(cause)


def run_last(ctx: GateContext, s: LongContextSettings, counter: TokenCounter, context: int, max_prompt: int) -> None:
    """The check on the run's own targets, last in the gate: the bundled pair (the laboratory,
    whose faults are the findings), or a URL target where the policy allows it
    (`batch_features_urls`): it may kill the server it probes, and a URL target is often in use."""
    if s.batch_features_urls or not any(_kind(ctx, r) == "url" for r in ("reference", "candidate")):
        run(ctx, s, counter, context, max_prompt)
        return
    ctx.skip(BATCH_FEATURES, "not run: a target is a URL, and this check may kill the engine it probes (vLLM 0.31.0's and "
             "0.32.0's CPU engines die on a seeded request split by chunked prefill); launch both targets "
             "(kind: launch) to run it on fresh copies, or set gates.longctx.batch_features_urls: true", advisory=True)


def _kind(ctx: GateContext, role: str) -> str:
    spec = ctx.run.specs.get(role)
    return spec.kind if spec is not None else "url"


def on_copies(ctx: GateContext) -> bool:
    """Whether the check runs on fresh launches of both targets: an engine gatekeeper launches from
    a command is one of them, and neither is a URL target (the bundled pair runs it on itself)."""
    kinds = {_kind(ctx, r) for r in ("reference", "candidate")}
    return ctx.run.launch is not None and "url" not in kinds and "launch" in kinds


def _copies(ctx: GateContext) -> tuple[Endpoint, Endpoint] | None:
    """The endpoints the check drives: fresh launches of both targets where gatekeeper starts them
    (a feature that kills an engine must not take the run's targets with it: it kills vLLM
    0.31.0's and 0.32.0's alike), else the run's own (URL targets; the check then runs last in the
    gate). None, with a SKIP, when a copy does not start."""
    if not on_copies(ctx):
        return ctx.reference, ctx.candidate
    specs, launch = ctx.run.specs, ctx.run.launch
    assert launch is not None
    try:
        with ThreadPoolExecutor(2) as pool:
            ref = pool.submit(launch, "reference-batch", specs["reference"])
            cand = pool.submit(launch, "candidate-batch", specs["candidate"])
            return ref.result(), cand.result()
    except EndpointError as e:
        ctx.not_judged("request failed", len(FEATURES), 0)
        ctx.check(BATCH_FEATURES, Status.ERROR, f"a copy of a target for this check did not start: {e}")
        return None


def _judge(ctx: GateContext, ref: list[Outcome], cand: list[Outcome], condition: str, budget: int, length: int,
           fillers_n: int, t0: float, died: bool, shared_death: str | None = None) -> None:
    """Record the check from both targets' outcomes; `shared_death`: the root cause both copies'
    engines died of in this check (the candidate's failures are then a defect both builds share:
    the reference's engine met it later in the same batches, as vLLM 0.31.0's does by luck)."""
    rows, broken, changed, unjudged = [], [], [], []
    dead_after = False
    for feature, r, c in zip(FEATURES, ref, cand):
        state = _state(r, c, dead_after)
        rows.append([feature.name, _show(r), _show(c), state])
        if state.startswith("not judged"):
            unjudged.append((feature, state))
            continue
        if state == "fails in the batch":
            broken.append((feature, c))
            dead_after = died
        elif state == "answer changed in the batch":
            changed.append(feature)
    both_died = [f for f, _ in broken] if shared_death is not None else []
    if both_died:  # not the candidate's regression: both builds' engines die of it in a full batch
        unjudged += [(f, SHARED_DEATH) for f in both_died]
        rows = [[*row[:3], SHARED_DEATH] if row[0] in {f.name for f in both_died} else row for row in rows]
        broken = []
    judged = len(FEATURES) - len(unjudged)
    shared = [f for f, why in unjudged if why == REFERENCE_FAILS and _outcomes(f, ref, cand)[1].batch_error() is not None]
    errors = [a for f in shared for o in _outcomes(f, ref, cand) for a in (*o.batched, o.repeat_error)
              if isinstance(a, EndpointError)]
    shared_error = str(next((e for e in errors if e.kind != "dead"), errors[0] if errors else ""))[:200]
    ctx.judged(judged)
    for _, why in unjudged:
        ctx.not_judged(why.removeprefix(UNJUDGED))
    table = Table("each feature alone and in a full batch", ["feature", "reference", "candidate", "judged"], rows)
    metrics = BatchFeaturesFinding(features=len(FEATURES), judged=judged, broken=tuple(f.name for f, _ in broken),
                                   changed=tuple(f.name for f in changed), batch_tokens=budget, prompt_tokens=length,
                                   fillers=fillers_n)
    if broken:
        feature, c = broken[0]
        err = c.batch_error()
        again = _outcomes(feature, ref, cand)[0].repeats
        ctx.check(BATCH_FEATURES, Status.FAIL, f"{feature.name}: the candidate answered it alone but failed in a full batch ({err}) — "
                  f"{condition}; the reference answered it both ways"
                  + (f", and in {again} more full batches of it" if again else "")
                  + ("; the candidate's engine died there" if died else "")
                  + (f"; also failing: {', '.join(f.name for f, _ in broken[1:])}" if len(broken) > 1 else ""),
                  metrics, [table], started=t0, judgement=Judgement.EXACT)
    elif both_died:
        ctx.check(BATCH_FEATURES, Status.WARN, f"both builds' engines died of one cause in a full batch — {shared_death} — the "
                  f"candidate's on {', '.join(f.name for f in both_died)}, the reference's later in the same check: a defect "
                  f"both share, not a regression of the candidate, and not judged ({condition}); {judged} of "
                  f"{len(FEATURES)} features judged", metrics, [table], started=t0, judgement=Judgement.EXACT)
    elif not judged:
        ctx.check(BATCH_FEATURES, Status.SKIP, "undecided: no request feature could be judged ("
                  + "; ".join(f"{f.name}: {why.removeprefix(UNJUDGED)}" for f, why in unjudged) + ")", metrics, [table],
                  started=t0, undecided=True)
    elif shared:
        ctx.check(BATCH_FEATURES, Status.WARN, f"both targets fail {', '.join(f.name for f in shared)} in a full batch — a bug the "
                  f"reference has too, so not a regression of the candidate and not judged ({condition}; e.g. "
                  f"{shared_error})" + (f"; the candidate's answer also changed there for {', '.join(f.name for f in changed)}"
                                        if changed else "") + f"; {judged} of {len(FEATURES)} features judged",
                  metrics, [table], started=t0, judgement=Judgement.EXACT)
    elif changed:
        ctx.check(BATCH_FEATURES, Status.WARN, f"every judged feature answered in a full batch, but the candidate's answer changed "
                  f"there for {', '.join(f.name for f in changed)} where the reference's did not ({condition})",
                  metrics, [table], started=t0, judgement=Judgement.EXACT)
    else:
        ctx.check(BATCH_FEATURES, Status.PASS, f"{judged} of {len(FEATURES)} request features gave the candidate the same answer "
                  f"alone and in a full batch ({condition})"
                  + (f"; not judged: {'; '.join(f'{f.name} ({why.removeprefix(UNJUDGED)})' for f, why in unjudged)}"
                     if unjudged else ""),
                  metrics, [table], started=t0, judgement=Judgement.EXACT,
                  limit=exact("request feature answered differently in a full batch than alone", judged))


def _outcomes(feature: Feature, ref: list[Outcome], cand: list[Outcome]) -> tuple[Outcome, Outcome]:
    i = FEATURES.index(feature)
    return ref[i], cand[i]


def _state(r: Outcome, c: Outcome, dead_after: bool) -> str:
    """What one feature's outcomes say: judged as same / changed / failing, or why not judged."""
    if r.refusal() is not None or c.refusal() is not None:
        return "not judged: capability missing"
    if not r.dead and not c.dead and refused_alike(*r.batched, *r.alone, *c.batched, *c.alone) is not None:
        return "not judged: capability missing"  # both answer every copy the same error (a 500 naming the feature)
    if dead_after:
        return "not judged: the candidate's engine had died"
    if r.batch_error() is not None:
        return REFERENCE_FAILS
    if c.batch_error() is not None:
        return "fails in the batch"
    if r.alone_error() is not None or c.alone_error() is not None:
        return "not judged: request failed"
    return "same" if c.same() or not r.same() else "answer changed in the batch"


def _show(o: Outcome) -> str:
    err = o.refusal() or o.batch_error()
    if err is not None:
        return f"batch: {err.kind} {err.status or ''} ({err.detail[:80]})"
    err = o.alone_error()
    if err is not None:
        return f"alone: {err.kind} {err.status or ''} ({err.detail[:80]})"
    if o.same():
        return "same"
    b, a = next((b, a) for b, a in zip(o.batched, o.alone) if _form(b) != _form(a))
    return f"changed: {_form(a)[0][:30]!r} alone → {_form(b)[0][:30]!r} in the batch"
