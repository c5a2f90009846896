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
delimiters. `golden.pass_rate` summarises pass rates by family for both endpoints.

A failure looks like: an engine that ignores EOS (`OK` followed by rambling, finish_reason
"length"), a broken streaming tool parser, NaN logits (`!!!!!!!!`), a candidate that loops.

Policy settings (the `golden:` section):
- `concurrency` (4): parallel requests per pass;
- `noise_floor_concurrency` (1): concurrency of the reference's second pass;
- `similar_threshold` (0.8): default threshold of similar_to_reference;
- `stream_variants` (true): run the streaming variants;
- `shared_hard_failures` ("WARN"): the status of a hard failure (degenerate output, invalid JSON)
  that the reference shows too in every run — a case the model cannot do; "FAIL" blocks on it;
- `max_pass_rate_drop` (0.0): how far the candidate's pass rate may fall below the reference's,
  beyond the reference's own run-to-run noise, before `golden.pass_rate` fails;
- `baseline` (null): a baseline JSONL (`gatekeeper golden record`) whose answers stand in for the
  live reference;
- `cases` (["*"]): globs over check names (case ids) choosing the cases to run, e.g. a smoke subset;
  a glob that matches no case is a configuration error (a typo would silently drop cases).
"""

from __future__ import annotations

import fnmatch
import time
from typing import Any

from gatekeeper.errors import ConfigError, EndpointError
from gatekeeper.gates.interface import Gate, GateContext
from gatekeeper.golden.answer import render_answer
from gatekeeper.golden.baseline import Baseline, load_baseline
from gatekeeper.golden.golden_set import GoldenCase, GoldenSet
from gatekeeper.golden.judge import Judgement, judge_case, judge_stream, passes_absolute
from gatekeeper.golden.request import Asker
from gatekeeper.golden.summary import PassRates
from gatekeeper.responses import ChatResponse
from gatekeeper.results import Evidence, Status
from gatekeeper.text import first_divergence

Answer = ChatResponse | EndpointError


class GoldenGate(Gate):
    """See the module docstring."""

    id = "golden"
    stage = 3
    title = "Golden prompts"
    defaults: dict[str, Any] = {"concurrency": 4, "noise_floor_concurrency": 1, "similar_threshold": 0.8,
                                "stream_variants": True, "shared_hard_failures": "WARN", "max_pass_rate_drop": 0.0,
                                "baseline": None, "cases": ["*"]}

    def run(self, ctx: GateContext) -> None:
        """Answer every case on both endpoints, judge each, then the stream variants and the summary."""
        settings = {**self.defaults, **(ctx.settings or {})}
        settings["shared_hard_failures"] = _status(settings["shared_hard_failures"])  # ConfigError before any request
        cases = _select(_named_cases(ctx.golden), settings["cases"])
        if not cases:
            ctx.skip("cases", "no golden set loaded (pass --golden FILE)" if not ctx.golden
                     else "the policy's golden.cases selects no case")
            return
        baseline = load_baseline(settings["baseline"]) if settings.get("baseline") else None
        runnable = []
        for name, case in cases:
            missing = _missing_capability(ctx, case, baseline is None)
            if missing:
                ctx.skip(name, missing, family=case.family)
            else:
                runnable.append((name, case))
        conc, floor_conc = int(settings["concurrency"]), int(settings["noise_floor_concurrency"])
        only = [c for _, c in runnable]
        ctx.progress(f"golden: {len(only)} cases on the candidate")
        ask_cand, ask_ref = Asker(ctx.candidate, ctx.seed), Asker(ctx.reference, ctx.seed)
        cand = ctx.parallel(ask_cand, only, conc)
        refs = self._reference_runs(ctx, ask_ref, only, baseline, conc, floor_conc)
        rates = PassRates()
        for i, (name, case) in enumerate(runnable):
            self._judge(ctx, name, case, cand[i], [r[i] for r in refs], settings, rates)
        if settings["stream_variants"]:
            self._streams(ctx, (ask_cand, ask_ref), runnable, cand, refs, baseline, conc)
        rates.report(ctx, float(settings["max_pass_rate_drop"]))

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
        first = ctx.parallel(ask_ref, cases, conc)
        second = ctx.parallel(ask_ref, cases, floor_conc)
        return [first, second]

    def _judge(self, ctx: GateContext, name: str, case: GoldenCase, cand: Answer, refs: list[Answer],
               settings: dict[str, Any], rates: PassRates) -> None:
        if isinstance(cand, EndpointError):
            ctx.error_check(name, cand, family=case.family)
            rates.add(case.family, None, None, Status.ERROR)
            return
        good_refs = [r for r in refs if isinstance(r, ChatResponse)]
        if not good_refs:
            err = refs[0]
            assert isinstance(err, EndpointError)
            ctx.check(name, Status.ERROR, f"the reference could not answer, so the case cannot be judged: {err}",
                      {"error_kind": err.kind, "role": "reference"}, family=case.family)
            rates.add(case.family, passes_absolute(case, cand), None, Status.ERROR)
            return
        j = judge_case(case, cand, good_refs, float(settings["similar_threshold"]), settings["shared_hard_failures"])
        if len(good_refs) < len(refs):
            j.notes.append("note: the reference's noise-floor run failed; judged against one run")
        ev = [] if j.status is Status.PASS else [_pair("reference vs candidate", case, good_refs[0], cand)]
        ctx.check(name, j.status, j.reason, j.metrics, ev, family=case.family)
        ref_ok = [passes_absolute(case, r) for r in good_refs]
        rates.add(case.family, passes_absolute(case, cand), ref_ok[0], j.status, reference_flip=len(set(ref_ok)) > 1)

    def _streams(self, ctx: GateContext, askers: tuple[Asker, Asker], runnable: list[tuple[str, GoldenCase]],
                 cand: list[Answer], refs: list[list[Answer]], baseline: Baseline | None, conc: int) -> None:
        """The `.stream` checks: streamed versus non-streamed answers of the candidate. The reference
        streams only the cases where the candidate's two answers disagree (to tell noise from a bug)."""
        items = [(i, name, case) for i, (name, case) in enumerate(runnable) if case.stream_variant]
        if not items:
            return
        if ctx.capabilities.get("candidate", {}).get("streaming") is False:
            for _, name, case in items:
                ctx.skip(f"{name}.stream", "the candidate does not stream (capability probe)", family=case.family)
            return
        ctx.progress(f"golden: {len(items)} stream variants")
        cases = [case for _, _, case in items]
        cand_stream = ctx.parallel(lambda c: askers[0](c, stream=True), cases, conc)
        ref_stream: list[Answer | None] = [None] * len(cases)
        if baseline is not None:
            ref_stream = [baseline.stream.get(c.id) for c in cases]
        elif ctx.capabilities.get("reference", {}).get("streaming") is not False:
            differ = []
            for k, ((i, _, case), streamed) in enumerate(zip(items, cand_stream)):
                plain = cand[i]
                if isinstance(streamed, ChatResponse) and isinstance(plain, ChatResponse) \
                        and judge_stream(case, streamed, plain).status is not Status.PASS:
                    differ.append(k)
            for k, answer in zip(differ, ctx.parallel(lambda c: askers[1](c, stream=True), [cases[k] for k in differ], conc)):
                ref_stream[k] = answer
        for (i, name, case), streamed, ref_s in zip(items, cand_stream, ref_stream):
            self._judge_stream(ctx, f"{name}.stream", case, streamed, cand[i], ref_s, [r[i] for r in refs])

    def _judge_stream(self, ctx: GateContext, name: str, case: GoldenCase, streamed: Answer, plain: Answer,
                      ref_stream: Answer | None, refs: list[Answer]) -> None:
        started = time.perf_counter()
        if isinstance(streamed, EndpointError):
            ctx.error_check(name, streamed, family=case.family)
            return
        if isinstance(plain, EndpointError):
            ctx.check(name, Status.ERROR, "no non-streamed answer to compare with (its request failed)", family=case.family)
            return
        good = [r for r in refs if isinstance(r, ChatResponse)]
        pair = (ref_stream, good[0]) if isinstance(ref_stream, ChatResponse) and good else None
        noisy = len(good) > 1 and render_answer(good[0]) != render_answer(good[1])
        j: Judgement = judge_stream(case, streamed, plain, pair, noisy)
        ev = [] if j.status is Status.PASS else [_pair("non-streamed vs streamed (candidate)", case, plain, streamed)]
        ctx.check(name, j.status, j.reason if j.reasons else "the streamed answer equals the non-streamed one",
                  j.metrics, ev, family=case.family, started=started)


def validate_settings(settings: dict[str, Any], sets: list[GoldenSet], policy_path: str | None = None) -> None:
    """Check the settings a run cannot recover from before any engine starts (ConfigError, exit 3)."""
    try:
        _status(settings.get("shared_hard_failures", "WARN"))
        _select(_named_cases(sets), settings.get("cases", ["*"]))
    except ConfigError as e:
        raise ConfigError(str(e), policy_path, key=None) from None


def _status(value: Any) -> Status:
    """A policy's FAIL/WARN setting as a Status (ConfigError otherwise)."""
    if str(value).upper() not in ("FAIL", "WARN"):
        raise ConfigError(f"must be FAIL or WARN, got {value!r}", key="gates.golden.shared_hard_failures")
    return Status(str(value).upper())


def _named_cases(sets: list[GoldenSet]) -> list[tuple[str, GoldenCase]]:
    """Check names per case: the case id, prefixed by the set name when ids collide across sets."""
    ids = [c.id for s in sets for c in s.cases]
    return [(c.id if ids.count(c.id) == 1 else f"{s.name}.{c.id}", c) for s in sets for c in s.cases]


def _select(cases: list[tuple[str, GoldenCase]], globs: Any) -> list[tuple[str, GoldenCase]]:
    """The cases whose check name matches one of `globs`; ConfigError for a bad or unmatched glob."""
    if not isinstance(globs, list) or not all(isinstance(g, str) for g in globs):
        raise ConfigError(f"must be a list of glob strings, got {globs!r}", key="gates.golden.cases")
    if cases:
        for glob in globs:
            if not any(fnmatch.fnmatchcase(name, glob) for name, _ in cases):
                raise ConfigError(f"{glob!r} matches no golden case", key="gates.golden.cases")
    return [(name, c) for name, c in cases if any(fnmatch.fnmatchcase(name, g) for g in globs)]


def _missing_capability(ctx: GateContext, case: GoldenCase, live_reference: bool) -> str | None:
    """Why a case cannot run (a capability the probe found missing), or None."""
    if not case.tools:
        return None
    for role in ("candidate", "reference") if live_reference else ("candidate",):
        if ctx.capabilities.get(role, {}).get("tools") is False:
            return f"the {role} does not support tool calling (capability probe), so this tool case cannot run"
    return None


def _missing(baseline: Baseline, case_id: str, run: int) -> EndpointError:
    why = baseline.errors.get(case_id) or f"no answer #{run + 1} for this case in the baseline"
    return EndpointError("unsupported", baseline.path, why)


def _pair(title: str, case: GoldenCase, reference: ChatResponse, candidate: ChatResponse) -> Evidence:
    ref_text, cand_text = render_answer(reference), render_answer(candidate)
    return Evidence("text_pair", title, {"reference": ref_text, "candidate": cand_text,
                                         "divergence": first_divergence(ref_text, cand_text), "prompt": case.prompt_text})
