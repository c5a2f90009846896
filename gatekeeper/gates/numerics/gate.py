"""Gate 2 — numerical consistency, teacher-forced logprobs against per-dtype tolerances.

The checks, why, and what a failure looks like are `NumericsGate`'s docstring (the report shows
it); the tolerances and defaults are in `settings.py`, the per-position statistics in `stats.py`.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from gatekeeper.endpoints.client import Endpoint
from gatekeeper.errors import EndpointError
from gatekeeper.detection import DetectionLimit, Items, exact, items_limit, tolerance
from gatekeeper.evidence import Evidence, Histogram, Table, TextPair
from gatekeeper.endpoints.fanout import fan_out, raise_first
from gatekeeper.gates.interface import Gate, GateContext
from gatekeeper.stats.noise import ask_twice
from gatekeeper.gates.numerics.settings import NumericsSettings
from gatekeeper.gates.numerics.stats import Scored, ScoreComparison, compare
from gatekeeper.endpoints.responses import CompletionResponse
from gatekeeper.results import Judgement, Status
from gatekeeper.stats.quantiles import percentile
from gatekeeper.gates.numerics import checks
from gatekeeper.gates.numerics.checks import DriftFinding, NanInfFinding, ScoringFinding, TokenizationFinding



def _nll_drift(comparisons: list[ScoreComparison]) -> float:
    """Relative drift of the mean per-token NLL over all prompts (perplexity's log-ratio scale)."""
    nll_a = float(np.mean([c.nll_a for c in comparisons]))
    nll_b = float(np.mean([c.nll_b for c in comparisons]))
    return abs(nll_b - nll_a) / max(nll_a, 1e-9)


class NumericsGate(Gate):
    """Gate 2 — numerical consistency, teacher-forced.

    The reference greedy-decodes a continuation of each fixed prompt; then both targets score the
    same text (prompt + that continuation) through echo with logprobs, so every position is
    compared at an identical context. Reported per prompt and overall: max / mean / p99 absolute
    logprob delta of the actual token where the reference ranks it in its top-k (an out-of-distribution
    prompt token at -15 nats moves by several nats under bf16 rounding alone), top-1 agreement, top-k overlap, KL over the shared top-k
    (remaining mass as one bucket), relative drift of the mean NLL (perplexity), and NaN/Inf count.

    The noise floor: the reference scores the same texts a second time at another concurrency and
    order (`noise_floor_concurrency`), and
    every threshold is loosened to at least `noise_multiplier` × what the reference disagrees with
    itself — never tighter than the noise. Tolerances are per candidate dtype.

    A failure looks like: NaN logprobs (stale cache residue, a fused kernel reading the wrong
    dtype), or a candidate whose distribution has drifted well beyond its dtype's rounding.

    Every figure comes from the one batch of scoring requests, so each check's time is that
    batch's (from the first decoding request to the check), not the moment spent on its arithmetic.
    """

    id = checks.GATE
    stage = 2
    title = "Numerical consistency"
    Settings = NumericsSettings
    min_judged_share = 0.75
    judgement = Judgement.TOLERANCE  # each figure passes within its per-dtype limit, loosened by the noise floor

    def run(self, ctx: GateContext) -> None:
        """Decode on the reference, score everywhere, compare against dtype tolerances."""
        s: NumericsSettings = ctx.settings
        missing = ctx.missing("echo")
        if missing:
            ctx.skip(checks.SCORING, "teacher-forced scoring needs echo with logprobs — " + missing.reason, advisory=missing.shared)
            for name in checks.CHECKS:
                ctx.skip(name, "not run: no teacher-forced scoring", advisory=missing.shared)
            return
        t0 = time.perf_counter()
        prompts = list(s.prompts)
        k = min(s.top_k, *(c.top_logprobs_max or 5 for c in ctx.capabilities.values()))
        try:
            texts = self._continuations(ctx, prompts)
            ref, noise = self._score_reference(ctx.reference, texts, k, s)
            cand = _scored(fan_out(_scorer(ctx.candidate, k), texts, s.concurrency))
        except EndpointError as e:
            ctx.error_check(checks.SCORING, e)
            return
        same = _tokenization(ctx, texts, ref, cand, t0)
        if not same:
            ctx.check(checks.SCORING, Status.SKIP, "no prompt tokenizes the same on both targets: nothing to compare token by "
                      "token (see numerics.tokenization)", started=t0)
            for name in checks.CHECKS:
                ctx.skip(name, "not run: no prompt tokenizes the same on both targets")
            return
        ctx.check(checks.SCORING, Status.PASS, f"{len(same)} of {len(prompts)} prompts scored teacher-forced on both targets"
                  + ("" if len(same) == len(prompts) else " (the others tokenize differently: numerics.tokenization)"),
                  started=t0, finding=ScoringFinding(prompts=len(prompts), scored=len(same), top_k=k),
                  limit=exact("prompt the candidate cannot score teacher-forced", len(prompts)))
        self._judge(ctx, [prompts[i] for i in same], [compare(ref[i], cand[i], k) for i in same],
                    [compare(ref[i], noise[i], k) for i in same], k, t0)

    def _continuations(self, ctx: GateContext, prompts: list[str]) -> list[str]:
        s: NumericsSettings = ctx.settings
        outs = fan_out(lambda p: ctx.reference.completion(p, max_tokens=s.max_new_tokens), prompts, s.concurrency)
        return [p + o.text for p, o in zip(prompts, raise_first(outs))]

    def _score_reference(self, ep: Endpoint, texts: list[str], k: int, s: NumericsSettings) -> tuple[list[Scored], list[Scored]]:
        """The reference's scores, and its noise-floor pass's (another concurrency and order)."""
        passes = ask_twice(_scorer(ep, k), texts, s.concurrency, s.noise_floor_concurrency)
        assert passes.second is not None  # the settings require a noise-floor pass
        return _scored(passes.first), _scored(passes.second)

    def _judge(self, ctx: GateContext, prompts: list[str], cands: list[ScoreComparison], noises: list[ScoreComparison],
               k: int, started: float) -> None:
        """The figures' checks, each timed from `started` (the scoring batch they share)."""
        dtype = ctx.run.runtimes["candidate"].dtype
        s: NumericsSettings = ctx.settings
        tol = s.tolerance(dtype)
        m, most = s.noise_multiplier, s.max_noise_loosening
        all_c = [d for c in cands for d in c.ranked_deltas]
        all_n = [d for c in noises for d in c.ranked_deltas]
        missing = sum(c.missing_b for c in cands)
        ranked = (f"{len(all_c)} of {sum(c.positions for c in cands)} positions (the reference's top-{k} tokens)"
                  + (f"; {missing} position(s) the candidate returned no logprob for" if missing else ""))

        def pct(xs: list[float], q: float) -> float:
            return percentile(xs, q) or 0.0

        def r(x: float | None, digits: int) -> float | None:
            return None if x is None else round(x, digits)

        rows = [[p[:40], c.positions, len(c.ranked_deltas), round(c.max_delta, 5), round(c.mean_delta, 5), r(c.top1_agreement, 3),
                 r(c.topk_overlap, 3), r(c.kl_mean, 6), round(c.nll_rel_drift, 5), c.bad_b, c.missing_b]
                for p, c in zip(prompts, cands)]
        table = Table("per prompt (candidate vs reference)", ["prompt", "positions", "ranked", "max |Δ|", "mean |Δ|", "top-1",
                                                              "top-k overlap", "KL", "NLL drift", "NaN/Inf", "missing"], rows)
        bad = sum(c.bad_b for c in cands)
        # A null where the reference has a number is what a NaN becomes in strict JSON (orjson writes
        # it so): with no NaN/Inf seen, the check cannot say there was none — undecided, which HOLDs.
        undecided = bool(missing) and not bad
        ctx.check(checks.NAN_INF, Status.FAIL if bad else Status.WARN if undecided else Status.PASS,
                  f"{bad} NaN/Inf logprob(s) from the candidate" if bad else
                  (f"undecided: no NaN/Inf, but {missing} position(s) came back null where the reference has a logprob "
                   "(a NaN serialised as JSON null looks the same)" if undecided else "no NaN/Inf"),
                  NanInfFinding(nan_inf=bad, missing=missing), [table] if bad or undecided else [],
                  undecided=undecided, started=started,
                  limit=exact("NaN/Inf logprob at the scored positions", sum(c.positions for c in cands)))

        def unstable(check: str, key: str, noise_value: float) -> None:
            ctx.skip(check, f"reference unstable: it disagrees with itself on {key} by {noise_value:.4g}, so the limit would be "
                            f"loosened past {most:g}x the policy's {tol[key]:g}; not judged")

        def upper(check: str, key: str, value: float, noise_value: float, stated: Callable[[float], DetectionLimit | None],
                  evidence: tuple[Evidence, ...] = (), over: str = "") -> None:
            if m * noise_value > most * tol[key]:
                unstable(check, key, noise_value)
                return
            limit = max(tol[key], m * noise_value)
            status = Status.PASS if value <= limit and not bad else Status.FAIL
            ctx.check(check, status, f"{key} {value:.6g} vs limit {limit:.6g} (policy {tol[key]:g}, noise floor {noise_value:.3g})"
                      + (f" over {over}" if over else ""),
                      DriftFinding(value=value, limit=limit, policy=tol[key], noise_floor=noise_value, dtype=dtype),
                      evidence,
                      limit=stated(limit), started=started)

        def lower(check: str, key: str, value: float, noise_value: float, over: str, judged: int) -> None:
            deficit = m * (1.0 - noise_value)
            if deficit > most * (1.0 - tol[key]) or deficit >= 1.0:
                unstable(check, key, noise_value)
                return
            limit = min(tol[key], 1.0 - deficit)
            status = Status.PASS if value >= limit and not bad else Status.FAIL
            name = check.removeprefix(f"{checks.GATE}.")
            ctx.check(check, status, f"{name} {value:.4f} vs minimum {limit:.4f} (policy {tol[key]:g}, noise floor "
                      f"{noise_value:.4f}) over {over}",
                      DriftFinding(value=value, limit=limit, policy=tol[key], noise_floor=noise_value, dtype=dtype),
                      limit=tolerance(limit, f"a mean {name.replace('_', ' ')} over the prompts below", judged),
                      started=started)

        moved = max(all_n, default=0.0)
        ctx.notes.append(f"noise floor: the reference scored the texts twice (concurrency {s.concurrency}, then "
                         f"{s.noise_floor_concurrency} in reverse order): " + (
                             "identical logprobs (reference deterministic)" if moved == 0.0 else
                             f"its ranked logprobs moved by up to {moved:.3g} nats"))
        hist = Histogram("|Δ logprob| of the reference token where the reference ranks it in its top-k", all_c[:5000],
                         "|Δ logprob| (nats)", tol["max_abs_delta"], is_key=True)
        if all_c:
            n = len(all_c)
            upper(checks.MAX_LOGPROB_DELTA, "max_abs_delta", max(all_c), max(all_n, default=0.0),
                  lambda lim: items_limit(n, f"scored positions whose |Δ logprob| exceeds {lim:.3g} nats"), (hist, table), ranked)
            # p99 passes its limit for certain once the value at the 99th percentile's lower index does
            upper(checks.P99_LOGPROB_DELTA, "p99_abs_delta", pct(all_c, 99), pct(all_n, 99),
                  lambda lim: items_limit(n, f"scored positions whose |Δ logprob| exceeds {lim:.3g} nats",
                                          n - int(0.99 * (n - 1))), over=ranked)
            upper(checks.MEAN_LOGPROB_DELTA, "mean_abs_delta", float(np.mean(all_c)), float(np.mean(all_n)) if all_n else 0.0,
                  lambda lim: tolerance(lim, "a mean |Δ logprob| (nats) above", n), over=ranked)
        else:
            for name in (checks.MAX_LOGPROB_DELTA, checks.P99_LOGPROB_DELTA, checks.MEAN_LOGPROB_DELTA):
                ctx.skip(name, f"no position where the reference ranks the scored token in its top-{k}"
                         + (f" and the candidate returns a logprob ({missing} missing)" if missing else ""))
        kl = [c.kl_mean for c in cands if c.kl_mean is not None]
        kl_noise = [c.kl_mean for c in noises if c.kl_mean is not None]
        if kl:
            upper(checks.KL, "kl_max", float(np.mean(kl)), float(np.mean(kl_noise)) if kl_noise else 0.0,
                  lambda lim: tolerance(lim, "a mean top-k KL divergence over the prompts above", len(kl)),
                  over=f"{len(kl)} of {len(cands)} prompts with shared top-k tokens")
        else:
            ctx.skip(checks.KL, "no position where both targets' top-k lists share a token (a target returned no top-k lists)")
        upper(checks.NLL_DRIFT, "nll_rel_drift_max", _nll_drift(cands), _nll_drift(noises),
              lambda lim: tolerance(lim, "a relative drift of the mean per-token NLL over the prompts above", len(cands)))
        for check, key in ((checks.TOP1_AGREEMENT, "top1_min"), (checks.TOPK_OVERLAP, "topk_overlap_min")):
            name = check.removeprefix(f"{checks.GATE}.")  # the comparison's field of the same name
            values = [v for c in cands if (v := getattr(c, name)) is not None]
            noise_values = [v for c in noises if (v := getattr(c, name)) is not None]
            if not values:
                ctx.skip(check, "no position where both targets return a top-k list: nothing to compare, not judged")
                continue
            lower(check, key, float(np.mean(values)), float(np.mean(noise_values)) if noise_values else 1.0,
                  f"{len(values)} of {len(cands)} prompts with top-k lists on both targets", len(values))


def _scorer(ep: Endpoint, k: int) -> Callable[[str], CompletionResponse]:
    """One teacher-forced scoring request: the text echoed back with its logprobs."""
    return lambda text: ep.completion(text, max_tokens=1, echo=True, logprobs=k)


def _scored(outs: list[CompletionResponse | EndpointError]) -> list[Scored]:
    """The scored text of each echo answer, without the one generated token."""
    scored = []
    for o in raise_first(outs):
        n = len(o.tokens) - (o.completion_tokens or 1)  # drop the generated token: score the text only
        scored.append(Scored(tuple(o.tokens[:n]), tuple(o.token_logprobs[:n]), tuple((o.top_logprobs + (None,) * n)[:n])))
    return scored


def _tokenization(ctx: GateContext, texts: list[str], ref: list[Scored], cand: list[Scored], started: float) -> list[int]:
    """`numerics.tokenization`: the targets must split each text into the same tokens (a changed
    tokenizer or pre-tokenizer is a real upgrade regression: a blocking FAIL showing the first
    text and token that differ), timed from `started` (the scoring batch). Returns the indices of
    the texts that tokenize the same."""
    same = [i for i, (a, b) in enumerate(zip(ref, cand)) if a.tokens == b.tokens]
    differ = [i for i in range(len(texts)) if i not in same]
    if not differ:
        ctx.check(checks.TOKENIZATION, Status.PASS, f"all {len(texts)} texts tokenize the same on both targets (echoed tokens)",
                  TokenizationFinding(texts=len(texts), differ=0), judgement=Judgement.EXACT,
                  judged=Items(len(texts), "texts the candidate tokenizes differently"), started=started)
        return same
    i = differ[0]
    a, b = ref[i].tokens, cand[i].tokens
    at = next((j for j, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    ctx.check(checks.TOKENIZATION, Status.FAIL, f"{len(differ)} of {len(texts)} texts tokenize differently; the first at token "
              f"{at}: reference {a[at:at + 3]!r}, candidate {b[at:at + 3]!r} ({len(a)} vs {len(b)} tokens)",
              TokenizationFinding(texts=len(texts), differ=len(differ), first_text=texts[i][:200], first_position=at),
              [TextPair("tokens of the first text that differs (reference vs candidate)", " | ".join(a), " | ".join(b),
                        None, texts[i][:500])], judgement=Judgement.EXACT, started=started)
    return same
