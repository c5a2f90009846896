"""Gate 4 — long context and tool calling: the check families in order, then NaN and metrics.

The checks, why, and what a failure looks like are `LongContextGate`'s docstring (the report
shows it); the settings are `settings.py`; each check family is a module of this package.
"""


from __future__ import annotations

from dataclasses import replace

from gatekeeper.errors import EndpointError
from gatekeeper.evidence import Table
from gatekeeper.gates.interface import Gate, GateContext
from gatekeeper.gates.longctx import (
    batch_features,
    block_sweep,
    needle_grid,
    prefix_cache,
    session_decay,
    tool_checks,
)
from gatekeeper.gates.longctx.settings import LongContextSettings
from gatekeeper.gates.longctx.scrape import Snapshot, delta, scrape
from gatekeeper.gates.longctx.tokens import TokenCounter
from gatekeeper.gates.longctx.traffic import Watched
from gatekeeper.results import Status
from gatekeeper.gates.longctx import checks
from gatekeeper.gates.longctx.checks import CacheMetricsFinding, NanInfFinding
from gatekeeper.detection import exact

_FALLBACK_CONTEXT = 2048
_FALLBACK_BLOCK = 16


class LongContextGate(Gate):
    """Gate 4 — long context and tool calling: does the candidate stay right as contexts grow?

    The KV-cache reuse bug (docs/bug-classes.md#kv-cache-reuse) is why this gate exists: with prefix
    caching on, prompts near a multiple of the KV block size, uneven growth per turn and many
    concurrent sessions, a reused KV block leaks one conversation into another. Round 1 is fine,
    round 5 is wrong — and startup, short golden prompts, latency and HTTP codes all stay green.
    Every request here goes to both targets verbatim and greedy, and a check fails on what the
    candidate gets wrong that the reference gets right (or on answers that differ where both should
    be equal):

    - `longctx.needle_grid`: a secret at several depths of prompts of several lengths;
    - `longctx.block_boundary`: prompts of exactly B·k−1, B·k and B·k+1 tokens;
    - `longctx.prefix_cache.cold_warm` / `.shared_prefix`: cache hits must answer as misses do;
    - `longctx.tool_calls`, `.tool_result`, `.tool_stream`, `.json_schema`: tool calls (BFCL-style,
      parallel calls order-free, a tool result used, streamed = non-streamed) and JSON to a schema
      after a long chat;
    - `longctx.session_decay`: N concurrent multi-turn sessions with uneven growth, recall scored
      round by round; the candidate's session quality decay rate (SQDR) above the reference's by
      more than the policy allows fails; `longctx.session_agreement` limits answers that differ
      from the reference's; `longctx.trigger_conditions` says which of that bug's trigger
      conditions the run exercised (WARN naming the absent ones);
    - `longctx.batch_features`: request features that carry state of their own (a seed, logprobs,
      stop strings, a grammar, tools, n > 1) sent in full batches, where chunked prefill splits
      them, and alone: a feature the candidate fails only in the batch fails (vLLM 0.32.0's engine
      dies on a seeded request split by chunked prefill); on fresh copies of launched engines, not on
      URL targets unless the policy says so;
    - `longctx.nan_inf`: NaN/Inf logprobs in the candidate's answers; `longctx.metrics`: prefix-cache
      hit rate and KV usage from the candidate's Prometheus metrics, before and after.

    Noise floor: the reference answers the grid, sweep and prefix-cache prompts a second time at
    `noise_floor_concurrency`, in reverse order (0 turns it off); an answer it does not repeat is noise, never a regression.
    The sessions instead allow `max_disagreement` and test decay against chance (a sign test).
    Token counts come from `/tokenize` where a target has it, else they are estimated (reported).
    A failure looks like: recall falling away from the reference round after round while the early
    rounds agree (stale KV blocks), long needle rows failing while short ones pass (RoPE), a warm
    answer that differs from the cold one, `!!!!` with NaN logprobs.
    """

    id = checks.GATE
    stage = 4
    title = "Long context and tool calling"
    Settings = LongContextSettings
    min_judged_share = 0.5

    def run(self, ctx: GateContext) -> None:
        """The check families in order; the cache-churning session decay runs last."""
        s: LongContextSettings = ctx.settings
        block, block_from = _block_size(ctx, s.block_size)
        s = replace(s, block_size=block)
        ctx.notes.append(f"KV block size {block} tokens ({block_from})")
        tokenizer = _tokenizer(ctx)
        counter = (TokenCounter(tokenizer) if tokenizer is not None
                   else TokenCounter.by_usage_of(ctx.reference, "no target exposes /tokenize"))
        context, where = _context(ctx, s.context_tokens)
        max_prompt = context - s.answer_tokens - 4
        ctx.notes.append(f"context {context} tokens ({where}); token counts "
                         + counter.source)
        watched = Watched(ctx.candidate, ctx.capabilities["candidate"].logprobs)
        ctx = replace(ctx, candidate=watched)  # type: ignore[arg-type]  # same checks, notes and records
        before = scrape(ctx.candidate)
        copies = s.batch_features and batch_features.on_copies(ctx)
        if copies:  # on fresh launches of both targets: a feature that kills an engine kills only its copy
            batch_features.run(ctx, s, counter, context, max_prompt)
        needle_grid.run(ctx, s, counter, max_prompt)
        block_sweep.run(ctx, s, counter, max_prompt)
        prefix_cache.run(ctx, s, counter, max_prompt)
        tool_checks.run(ctx, s, counter, context)
        session_decay.run(ctx, s, counter, max_prompt)
        if s.batch_features and not copies:  # on the run's own targets: last, a death here costs the gate nothing
            batch_features.run_last(ctx, s, counter, context, max_prompt)
        _nan_check(ctx, watched)
        _metrics_check(ctx, before, scrape(ctx.candidate))
        ctx.notes.append(f"{counter.calls} token-count requests")


def _tokenizer(ctx: GateContext):
    """The endpoint whose /tokenize counts tokens: the reference's, else the candidate's, else None."""
    for role in ("reference", "candidate"):
        if ctx.capabilities[role].tokenize:
            return ctx.endpoints[role]
    return None


def _block_size(ctx: GateContext, configured: int) -> tuple[int, str]:
    """The KV block size the prompts are placed around: the policy's, else the one the candidate
    states (vLLM's `cache_config_info` in /metrics, or a `block_size=` log line), else 16."""
    if configured > 0:
        return configured, "policy"
    stated = (ctx.startup.observed.get("candidate") or {}).get("block_size", "")
    if stated.isdigit() and int(stated) > 0:
        return int(stated), "stated by the candidate"
    return _FALLBACK_BLOCK, "assumed: the candidate states none; set gates.longctx.block_size"


def _context(ctx: GateContext, configured: int) -> tuple[int, str]:
    """The context length: the policy's, else the smaller `max_model_len` the targets' /tokenize report."""
    if configured > 0:
        return configured, "policy"
    found = []
    for ep in ctx.endpoints.values():
        try:
            n = ep.post_json("/tokenize", {"model": ep.model, "prompt": "x"}).get("max_model_len")
        except EndpointError:
            continue
        if isinstance(n, int) and n > 0:
            found.append(n)
    if found:
        return min(found), "max_model_len from /tokenize"
    return _FALLBACK_CONTEXT, "assumed: no target reports max_model_len; set gates.longctx.context_tokens"


def _nan_check(ctx: GateContext, w: Watched) -> None:
    if not w.logprobs:
        ctx.check(checks.NAN_INF, Status.SKIP, "the candidate returns no logprobs (capability probe), so NaN/Inf cannot be seen")
        return
    if not w.answers:  # nothing watched: no PASS on nothing
        ctx.check(checks.NAN_INF, Status.WARN, "undecided: no answer of the candidate's was watched for NaN/Inf logprobs",
                  NanInfFinding(answers=0), undecided=True)
        return
    # A null logprob is what a NaN becomes in strict JSON: where some came back null and none was
    # NaN/Inf, the check cannot say there was none (undecided, which holds the run), not a pass.
    missing = (f"; {w.missing} token(s) came with a null logprob (a NaN serialised as JSON null looks the same)"
               if w.missing else "")
    undecided = bool(w.missing) and not w.non_finite
    status = Status.FAIL if w.non_finite else Status.WARN if w.missing else Status.PASS
    ctx.check(checks.NAN_INF, status,
              ("undecided: " if undecided else "")
              + (f"NaN/Inf logprobs: {w.non_finite} in {w.answers_hit} of the candidate's {w.answers} answers "
                 f"(e.g. {w.example!r})" if w.non_finite else f"no NaN/Inf logprobs in the candidate's {w.answers} answers")
              + missing,
              NanInfFinding(non_finite=w.non_finite, missing=w.missing, answers_hit=w.answers_hit, answers=w.answers),
              undecided=undecided, limit=exact("NaN/Inf logprob in the candidate's answers", w.answers))


def _metrics_check(ctx: GateContext, before: Snapshot, after: Snapshot) -> None:
    if not after.available:
        ctx.skip(checks.METRICS, "the candidate exposes no Prometheus /metrics: prefix-cache hit rate and KV usage unknown")
        return
    hits, queries = delta(before, after, "vllm:prefix_cache_hits"), delta(before, after, "vllm:prefix_cache_queries")
    rows = [[name, before.get(name), after.get(name)] for name in
            ("vllm:prefix_cache_hits", "vllm:prefix_cache_queries", "vllm:kv_cache_usage_perc", "vllm:num_preemptions",
             "gatekeeper:blocks_evicted", "gatekeeper:blocks_stale_rejected") if after.get(name) is not None]
    rate = f"{hits / queries:.0%}" if hits is not None and queries else "n/a"
    ctx.check(checks.METRICS, Status.PASS, f"prefix-cache hit rate over the gate {rate}"
              + (f" ({hits:.0f} of {queries:.0f} tokens)" if hits is not None and queries else ""),
              CacheMetricsFinding(prefix_cache_hits=hits, prefix_cache_queries=queries),
              [Table("candidate metrics before and after gate 4", ["metric", "before", "after"], rows)])
