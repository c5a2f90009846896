"""Gate 3 — golden prompts: known prompts answered the way they should be, beside the reference.

The checks, why, and what a failure looks like are `GoldenGate`'s docstring (the report shows
it); the settings are `settings.py`, the judging of one case `judge.py`, the pass-rate summary
`pass_rates.py`. The golden-set format itself is `gatekeeper/golden/`.
"""


from __future__ import annotations

import time
from dataclasses import replace
from functools import partial

from gatekeeper.errors import ConfigError, EndpointError, refused_alike
from gatekeeper.detection import Items, exact, fisher_limit
from gatekeeper.evidence import TextPair
from gatekeeper.endpoints.fanout import fan_out
from gatekeeper.gates.golden.judge import CaseJudgement, judge_case, judge_stream, passes_absolute
from gatekeeper.gates.golden.near_tie_review import review_near_ties
from gatekeeper.gates.golden.pass_rates import PassRates
from gatekeeper.gates.golden.settings import GoldenSettings
from gatekeeper.gates.golden.stream_cuts import ALPHA as STREAM_CUT_ALPHA, CutRates, count_cuts, extra_rounds
from gatekeeper.gates.interface import Gate, GateContext, Missing
from gatekeeper.stats import noise
from gatekeeper.stats.noise import ask_twice
from gatekeeper.golden.answer import render_answer, render_pair
from gatekeeper.golden.baseline import Baseline, load_baseline
from gatekeeper.golden.case_selection import named_cases, select_cases
from gatekeeper.golden.golden_set import GoldenCase
from gatekeeper.golden.request import Asker
from gatekeeper.endpoints.responses import ChatResponse
from gatekeeper.results import CheckResult, Judgement, Status
from gatekeeper.run_plan import RunPlan
from gatekeeper.text import first_divergence
from gatekeeper.gates.golden import checks
from gatekeeper.gates.golden.checks import ReferenceFailed, RepeatFinding, StreamCutsFinding

Answer = ChatResponse | EndpointError


class GoldenGate(Gate):
    """Gate 3 — golden prompts: does the candidate still answer known prompts the way it should?

    Every case of the golden sets (short deterministic answers and the `Reply with exactly: OK`
    canary, code, multilingual text, degeneration traps, EOS discipline, long output, JSON to a
    schema, tool calls, refusals) is sent greedily to both endpoints, and the reference a second time
    at another concurrency, so the batch composition differs and its self-disagreement (the noise
    floor) is measured. Each case becomes a check `golden.<case-id>`:

    - PASS: the candidate passes every assertion;
    - FAIL: a regression — it fails an assertion the reference passes; or a failure no reference is
      needed for (empty or degenerate output, `!!!!`-style runs, U+FFFD, invalid JSON where JSON is
      required, tool-call arguments that are not JSON); or it differs from a reference that agrees
      with itself (equals_reference / similar_to_reference);
    - WARN: both fail ("the case does not suit this model" — the golden set needs attention; this
      includes degenerate output the reference produces too), or the only difference is within the
      reference's own run-to-run noise;
    - ERROR: an endpoint failed on the case; SKIP: a needed capability (tools, streaming) is missing.

    Tool-call and JSON cases marked `stream_variant` also get `golden.<case-id>.stream`: the
    candidate's streamed answer must equal its non-streamed one (tool names and decoded arguments,
    decoded JSON, finish reason) — this catches a streaming tool parser that leaks partial
    delimiters. A stream the server cut short at random (no finish_reason, the answer's beginning or
    nothing) on both targets is judged as a rate, `golden.stream_cuts`, against the reference's own
    (stream_cuts.py). A request both targets refuse alike (`errors.refused_alike`: a parameter neither
    serves, whatever the status code when the bodies say the same thing) is a WARN, not judged, never an
    ERROR. `golden.pass_rate` summarises pass rates by family for both endpoints.

    A failure looks like: an engine that ignores EOS (`OK` followed by rambling, finish_reason
    "length"), a broken streaming tool parser, NaN logits (`!!!!!!!!`), a candidate that loops.

    The settings (the `golden:` section of a policy) and their defaults are `GoldenSettings`.
    """

    id = checks.GATE
    stage = 3
    title = "Golden prompts"
    Settings = GoldenSettings
    uses_golden_sets = True
    min_judged_share = 0.6  # the clean default run judges about three in four cases; the rest both fail identically

    @classmethod
    def validate(cls, settings: GoldenSettings, plan: RunPlan) -> None:
        """At plan time: the case globs resolve against the loaded golden sets and the baseline
        (if any) loads, so a typo exits 3 before any engine starts."""
        where = plan.policy.where("golden", "cases")
        try:
            select_cases(named_cases(plan.golden), settings.cases)
        except ConfigError as e:
            raise ConfigError(str(e), *where, key="gates.golden.cases") from None
        if settings.baseline:
            load_baseline(settings.baseline)

    @classmethod
    def next_step(cls, check: CheckResult, settings: GoldenSettings) -> str | None:
        """Precision flips beyond the limit, or a task lost at a near tie that could not be forced:
        what would decide them (a re-run asks the same greedy questions and gets the same answers)."""
        if not check.undecided:
            return None
        if check.id == checks.PASS_RATE and check.metrics.get("precision_flips"):
            return (f"read the flipped cases' forced evidence; if the candidate's precision change is intended, raise "
                    f"gates.golden.max_precision_flips (now {settings.max_precision_flips}); a decode-path fault reads as "
                    f"flips too, so run gate 5 (shadow), whose near_tie rate judges how often close calls move")
        if checks.is_case(check):
            return ("the case's reason says why the reference's answer could not be forced: a target without /tokenize or "
                    "/v1/completions with echo and logprobs can serve them; a case with a response format cannot be "
                    "forced, so judge its two answers by hand")
        return None

    def run(self, ctx: GateContext) -> None:
        """Answer every case on both endpoints, judge each, then the stream variants and the summary."""
        t0 = time.perf_counter()
        settings: GoldenSettings = ctx.settings
        cases = select_cases(named_cases(ctx.run.golden), settings.cases, settings.limit)
        if not cases:
            ctx.skip("cases", "no golden set loaded (pass --golden FILE)" if not ctx.run.golden
                     else "the policy's golden.cases selects no case")
            return
        baseline = load_baseline(settings.baseline) if settings.baseline else None
        runnable = []
        for name, case in cases:
            missing = _missing_capability(ctx, case, baseline is None)
            if missing:
                ctx.skip_missing(name, missing, family=case.family)
            else:
                runnable.append((name, case))
        conc, floor_conc = settings.concurrency, settings.noise_floor_concurrency
        only = [c for _, c in runnable]
        ctx.progress(f"golden: {len(only)} cases on the candidate")
        ask_cand, ask_ref = Asker(ctx.candidate, ctx.run.seed), Asker(ctx.reference, ctx.run.seed)
        cand = fan_out(ask_cand, only, conc)
        refs = self._reference_runs(ctx, ask_ref, only, baseline, conc, floor_conc)
        ref_changed = [_changed(a, b) for a, b in zip(*refs)]
        if baseline is None:
            ctx.notes.append(noise.describe("golden answers", sum(ref_changed), len(only), conc, floor_conc))
        else:
            ctx.notes.append(f"golden answers: the reference is the baseline {baseline.path} (its two recorded passes are "
                             "the noise floor)")
        rates = PassRates()
        judgements = [_judgement(case, cand[i], [r[i] for r in refs], settings) for i, (_, case) in enumerate(runnable)]
        review_near_ties(ctx, [c for _, c in runnable], judgements, settings, live_reference=baseline is None)
        for i, (name, case) in enumerate(runnable):
            self._record(ctx, name, case, cand[i], [r[i] for r in refs], judgements[i], rates)
        if settings.candidate_repeat and only:
            self._candidate_repeat(ctx, ask_cand, runnable, cand, ref_changed, floor_conc)
        if settings.stream_variants:
            self._streams(ctx, (ask_cand, ask_ref), runnable, cand, refs, baseline, conc)
            for check in ctx.checks:
                if checks.is_streamed(check) and check.family:
                    rates.add_stream(check.family, check.status)
        rates.report(ctx, settings.max_pass_rate_drop, settings.max_precision_flips, started=t0)

    def _reference_runs(self, ctx: GateContext, ask_ref: Asker, cases: list[GoldenCase], baseline: Baseline | None,
                        conc: int, floor_conc: int) -> list[list[Answer]]:
        """The reference's answers per run: two live passes at different concurrencies, or the baseline's."""
        if baseline is not None:
            runs: list[list[Answer]] = [[], []]
            for c in cases:
                recorded = baseline.answers.get(c.id, ())
                for k in range(2):
                    runs[k].append(recorded[k] if k < len(recorded) else _missing(baseline, c.id, k))
            return runs
        ctx.progress(f"golden: {len(cases)} cases on the reference (concurrency {conc}, then {floor_conc})")
        passes = ask_twice(ask_ref, cases, conc, floor_conc)
        assert passes.second is not None  # the settings require the noise-floor pass
        return [passes.first, passes.second]

    def _record(self, ctx: GateContext, name: str, case: GoldenCase, cand: Answer, refs: list[Answer],
                j: CaseJudgement | None, rates: PassRates) -> None:
        """Record one case's check (an ERROR where a side could not answer), its coverage and pass rates."""
        refusal = refused_alike(cand, *refs)
        if refusal is not None:  # a request feature neither target serves: not judged, not an ERROR
            ctx.refused_by_both(name, refusal, family=case.family)
            rates.add(case.family, None, None, Status.WARN)
            return
        if isinstance(cand, EndpointError):
            ctx.error_check(name, cand, family=case.family)
            ctx.not_judged("request failed", 1, requests=1)
            rates.add(case.family, None, None, Status.ERROR)
            return
        good_refs = [r for r in refs if isinstance(r, ChatResponse)]
        if j is None:
            # Without every reference pass there is no noise floor: an ERROR, never "noise".
            err = next(r for r in refs if isinstance(r, EndpointError))
            which = " could not answer" if not good_refs else "'s noise-floor pass failed on this case"
            ctx.not_judged("reference request failed", 1, requests=1)
            ctx.check(name, Status.ERROR, f"the reference{which}, so the case cannot be judged: {err}",
                      ReferenceFailed(error_kind=err.kind, role="reference"), family=case.family, failed=(err,))
            rates.add(case.family, passes_absolute(case, cand), None, Status.ERROR)
            return
        ref_ok = [passes_absolute(case, r) for r in good_refs]
        cand_ok = passes_absolute(case, cand)
        assert j.case is not None  # judge_case's
        found = replace(j.case, judged=j.judged, candidate_passes=cand_ok, reference_passes=ref_ok[0])
        ev = [] if j.status is Status.PASS else [_pair("reference vs candidate", case, good_refs[0], cand)]
        # its time is its candidate request's (the cases went out together, judged after): the request, then the judging
        ctx.check(name, j.status, j.reason, found, ev, family=case.family, started=time.perf_counter() - cand.e2e_s,
                  limit=exact("difference from the reference's answer") if j.judged and not j.forgiven else None,
                  undecided=j.undecided)
        _count(ctx, j)
        rates.add(case.family, None if j.undecided else cand_ok, ref_ok[0], j.status, reference_flip=len(set(ref_ok)) > 1,
                  precision_flip=j.precision_flip)

    def _candidate_repeat(self, ctx: GateContext, ask_cand: Asker, runnable: list[tuple[str, GoldenCase]], cand: list[Answer],
                          ref_changed: list[bool], floor_conc: int) -> None:
        """`golden.candidate_repeat`: the candidate asked again (reverse order, noise-floor
        concurrency); answers it does not repeat where the reference does are a finding (WARN)."""
        again = list(reversed(fan_out(ask_cand, [c for _, c in reversed(runnable)], floor_conc)))
        changed = [_changed(a, b) for a, b in zip(cand, again)]
        only_cand = [name for (name, _), c, r in zip(runnable, changed, ref_changed) if c and not r]
        reason = (f"the candidate changed {sum(changed)} of {len(changed)} answers on a second pass (the reference "
                  f"{sum(ref_changed)})" + (f"; only the candidate: {', '.join(only_cand[:10])}" if only_cand else ""))
        ctx.check(checks.CANDIDATE_REPEAT, Status.WARN if only_cand else Status.PASS, reason,
                  RepeatFinding(candidate_changed=sum(changed), reference_changed=sum(ref_changed), cases=len(changed),
                                only_candidate=tuple(only_cand)),
                  judged=Items(sum(not r for r in ref_changed), "answers the candidate does not repeat where the reference does"))

    def _streams(self, ctx: GateContext, askers: tuple[Asker, Asker], runnable: list[tuple[str, GoldenCase]],
                 cand: list[Answer], refs: list[list[Answer]], baseline: Baseline | None, conc: int) -> None:
        """The `.stream` checks: streamed versus non-streamed answers of the candidate. The reference
        streams only the cases where the candidate's two answers disagree (to tell noise from a bug)."""
        items = [(i, name, case) for i, (name, case) in enumerate(runnable) if case.stream_variant]
        if not items:
            return
        no_stream = ctx.missing("streaming", roles=("candidate",))
        if no_stream:
            for _, name, case in items:
                ctx.skip_missing(name + checks.STREAM_SUFFIX, no_stream, family=case.family)
            return
        # Streams the candidate lost finish reasons in: one finding in gate 1, not one per case.
        # Unreported (gate 1 did not run, or both targets lack them) the per-case checks say it.
        finish = "stream_finish_reason"
        no_finish = ctx.lacks(finish, "candidate") if ctx.reported(finish) else None
        ctx.progress(f"golden: {len(items)} stream variants")
        cases = [case for _, _, case in items]
        cand_stream = fan_out(lambda c: askers[0](c, stream=True), cases, conc)
        cand_pairs = [_both_answered(s, cand[i]) for (i, _, _), s in zip(items, cand_stream)]
        ref_stream: list[Answer | None] = [None] * len(cases)
        if baseline is not None:
            ref_stream = [baseline.stream.get(c.id) for c in cases]
        elif ctx.capabilities["reference"].streaming:
            if count_cuts(cand_pairs)[0]:  # a cut may be the server's, at random: the reference streams every case alike
                ask = list(range(len(cases)))
            else:  # the reference streams only the cases where the candidate's two answers differ
                ask = [k for k, pair in enumerate(cand_pairs)
                       if pair is not None and judge_stream(cases[k], *pair, finish_reasons=no_finish).status is not Status.PASS]
            for k, answer in zip(ask, fan_out(lambda c: askers[1](c, stream=True), [cases[k] for k in ask], conc)):
                ref_stream[k] = answer
        ref_pairs = [_both_answered(r, refs[0][i]) if r is not None else None for (i, _, _), r in zip(items, ref_stream)]
        if baseline is None and count_cuts(cand_pairs)[0] and count_cuts(ref_pairs)[0]:
            both = [k for k, (c, r) in enumerate(zip(cand_pairs, ref_pairs)) if c is not None and r is not None]
            more = self._restream(ctx, askers, [cases[k] for k in both], [cand_pairs[k] for k in both], [ref_pairs[k] for k in both])
            cand_pairs, ref_pairs = cand_pairs + more[0], ref_pairs + more[1]
        cuts = self._cut_rates(ctx, cand_pairs, ref_pairs)
        for (i, name, case), streamed, ref_s in zip(items, cand_stream, ref_stream):
            self._judge_stream(ctx, name + checks.STREAM_SUFFIX, case, streamed, cand[i], ref_s, [r[i] for r in refs], no_finish,
                               cuts is not None and cuts.shared)

    @staticmethod
    def _restream(ctx: GateContext, askers: tuple[Asker, Asker], cases: list[GoldenCase], cand_pairs: list[StreamPair | None],
                  ref_pairs: list[StreamPair | None]) -> tuple[list[StreamPair | None], list[StreamPair | None]]:
        """Both targets cut streams: the stream variants both answered streamed again on each, one at
        a time, the sides alternating which goes first, until each holds `MIN_STREAMS`
        (stream_cuts.extra_rounds); the new (streamed, plain) pairs of the candidate and of the reference.
        One at a time: a server that cuts the stream it serves when another request waits cuts none of
        these, so a candidate that cuts streams on its own stands out against its reference."""
        rounds = extra_rounds(len(cases))
        ctx.progress(f"golden: both targets cut streams; {rounds} more passes over {len(cases)} stream variants a side, one at a time")
        plain = ([p[1] for p in cand_pairs if p is not None], [p[1] for p in ref_pairs if p is not None])
        more: tuple[list[StreamPair | None], list[StreamPair | None]] = ([], [])
        for r in range(rounds):
            for side in ((1, 0) if r % 2 == 0 else (0, 1)):
                streamed = fan_out(partial(askers[side], stream=True), cases, 1)
                more[side].extend(_both_answered(s, p) for s, p in zip(streamed, plain[side]))
        return more

    def _cut_rates(self, ctx: GateContext, cand_pairs: list[StreamPair | None], ref_pairs: list[StreamPair | None]) -> CutRates | None:
        """`golden.stream_cuts` when both targets cut streams short (stream_cuts.py); the rates when the
        candidate cut any, else None."""
        cand_cut, cand_n = count_cuts(cand_pairs)
        if not cand_cut:
            return None
        rates = CutRates(cand_cut, cand_n, *count_cuts(ref_pairs))
        if rates.shared:
            p = rates.p_value()
            metrics = StreamCutsFinding(candidate_cut=rates.candidate_cut, candidate_streams=rates.candidate_streams,
                                        reference_cut=rates.reference_cut, reference_streams=rates.reference_streams,
                                        p_value=p, alpha=STREAM_CUT_ALPHA)
            if p < STREAM_CUT_ALPHA:
                ctx.check(checks.STREAM_CUTS, Status.FAIL, f"{rates.describe()}: more than the reference beyond chance "
                          f"(Fisher's exact test, one-sided, p={p:.2g} < {STREAM_CUT_ALPHA:g})", metrics,
                          judgement=Judgement.STATISTICAL)
            else:
                limit = fisher_limit(rates.candidate_streams, rates.reference_cut, rates.reference_streams,
                                     STREAM_CUT_ALPHA, "the candidate's streams cut short")
                ctx.check(checks.STREAM_CUTS, Status.PASS if limit else Status.WARN,
                          ("" if limit else "undecided: too few streams for any count of cuts to be beyond chance; ")
                          + f"{rates.describe()}: the server cuts streams at random on both targets; the candidate within "
                          f"chance of the reference's rate (Fisher's exact test, one-sided, p={p:.2g})", metrics,
                          judgement=Judgement.STATISTICAL, limit=limit, undecided=limit is None)
            ctx.judged()
        return rates

    def _judge_stream(self, ctx: GateContext, name: str, case: GoldenCase, streamed: Answer, plain: Answer,
                      ref_stream: Answer | None, refs: list[Answer], no_finish: str | None, cuts_shared: bool) -> None:
        # its time is its stream's (the streams went out together, judged after): the request, then the judging
        started = time.perf_counter() - (streamed.e2e_s if isinstance(streamed, ChatResponse) else 0.0)
        refusal = refused_alike(streamed, plain, *refs)
        if refusal is not None:  # the case's request feature, refused by both targets: not judged, not an ERROR
            ctx.refused_by_both(name, refusal, family=case.family)
            return
        if isinstance(streamed, EndpointError):
            ctx.error_check(name, streamed, family=case.family)
            ctx.not_judged("request failed", 1, requests=1)
            return
        if isinstance(plain, EndpointError):
            ctx.check(name, Status.ERROR, "no non-streamed answer to compare with (its request failed)", family=case.family)
            ctx.not_judged("request failed", 1, requests=1)
            return
        good = [r for r in refs if isinstance(r, ChatResponse)]
        pair = (ref_stream, good[0]) if isinstance(ref_stream, ChatResponse) and good else None
        noisy = len(good) > 1 and render_answer(good[0]) != render_answer(good[1])
        j: CaseJudgement = judge_stream(case, streamed, plain, pair, noisy, no_finish, cuts_shared)
        ev = [] if j.status is Status.PASS else [_pair("non-streamed vs streamed (candidate)", case, plain, streamed)]
        ctx.check(name, j.status, j.reason if j.reasons else "; ".join(["the streamed answer equals the non-streamed one", *j.notes]),
                  j.finding(), ev, family=case.family, started=started,
                  limit=exact("difference between the streamed and the non-streamed answer")
                  if j.judged and not j.forgiven else None)
        _count(ctx, j)


def _missing_capability(ctx: GateContext, case: GoldenCase, live_reference: bool) -> Missing | None:
    """Why a case cannot run (a capability the probe found missing), or None."""
    if not case.tools:
        return None
    return ctx.missing("tools", "tool_parsing", roles=("reference", "candidate") if live_reference else ("candidate",))


def _missing(baseline: Baseline, case_id: str, run: int) -> EndpointError:
    why = baseline.errors.get(case_id) or f"no answer #{run + 1} for this case in the baseline"
    return EndpointError("unsupported", baseline.path, why)


def _pair(title: str, case: GoldenCase, reference: ChatResponse, candidate: ChatResponse) -> TextPair:
    ref_text, cand_text = render_pair(reference, candidate)
    return TextPair(title, ref_text, cand_text, first_divergence(ref_text, cand_text), case.prompt_text)


def _changed(a: Answer, b: Answer) -> bool:
    """Whether two answers to one case differ (a failed request counts as a change)."""
    return not isinstance(a, ChatResponse) or not isinstance(b, ChatResponse) or render_answer(a) != render_answer(b)


StreamPair = tuple[ChatResponse, ChatResponse]
"""A streamed answer and the non-streamed answer to the same case, from one target."""


def _both_answered(streamed: Answer | None, plain: Answer) -> StreamPair | None:
    """(streamed, plain) when both are answers, else None."""
    if isinstance(streamed, ChatResponse) and isinstance(plain, ChatResponse):
        return streamed, plain
    return None


def _judgement(case: GoldenCase, cand: Answer, refs: list[Answer], settings: GoldenSettings) -> CaseJudgement | None:
    """The case judged (None when the candidate or any reference run failed to answer: not
    judged, and not worth a near-tie review)."""
    good_refs = [r for r in refs if isinstance(r, ChatResponse)]
    if isinstance(cand, EndpointError) or len(good_refs) < len(refs):
        return None
    return judge_case(case, cand, good_refs, settings.similar_threshold, settings.shared_hard_failure_status)


def _count(ctx: GateContext, j: CaseJudgement) -> None:
    """One case toward the gate's coverage: judged, or not and why."""
    if j.judged:
        ctx.judged()
    else:
        ctx.not_judged(j.unjudged or "not judged")
