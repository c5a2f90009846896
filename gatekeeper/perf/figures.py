"""The figures of one measured load block, with their definitions.

- TTFT: send to the first chunk carrying output text.
- TPOT: vLLM's definition — (E2E − TTFT) / (output tokens − 1), the first token excluded
  (guidellm's includes it: E2E / output tokens; `tpot_incl_first` is that one).
- ITL: the gaps between consecutive output chunks. `itl_median_s`: each request's median gap,
  their geometric mean over the block — the decode measure a contention spike moves least (one
  stalled gap moves a request's median by one rank); the mean log of a block pair is then the
  mean over its request pairs of log(candidate / baseline), the requests paired as sent.
- `cpu_s_per_token`: the server's CPU seconds over the block's requests (`perf/cpu.py`: its
  threads' on-CPU time, for a target launched here) per output token, prefill included — blind
  to waiting (sleeps, locks, I/O) and to GPU time, not to contention on the cores it runs on.
- `decode_s_per_token`: the block's decode time over its decode steps — Σ(E2E − TTFT) over
  Σ(output tokens − 1) of its requests, vLLM's TPOT weighted by length: every step of every
  request counts once, where TPOT p50 keeps one request's (and moves by rank).
- `e2e_s_per_token`: request seconds per output token — Σ E2E over Σ output tokens of the block's
  requests, prefill included: it needs only the send and the last byte. vLLM's CPU build splits
  a request's time between its first chunk and the rest differently from request to request
  (client TTFT and decode time correlated −0.81 over 240 requests here), so its
  `decode_s_per_token` spread by sd 0.28–0.77 in log ratio per block pair where this spread by
  0.11–0.22 (two launches of 0.31.0, 30–40 pairs each).
- E2E: send to the last byte.
- output tokens/s and requests/s: the *server's* throughput — output tokens (the server's
  `usage` count where it reports one) and successful requests over the block's wall time, from
  its first send to its last byte; for a synchronous block (one request at a time) over the sum
  of its requests' E2E, the server's busy time (the same, less the client's gaps, and still right
  when the block's requests took turns with another target's).
- goodput: successful requests per second that met every SLO (DistServe's definition, as
  `vllm bench serve --goodput`).
Percentiles are numpy's linear interpolation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gatekeeper.perf.loadgen import LoadResult, RequestRecord
from gatekeeper.stats.quantiles import percentile

QUANTILES = (50, 90, 95, 99)


@dataclass(frozen=True)
class Slo:
    """Per-request service-level objectives in seconds (None: not part of goodput)."""

    ttft_s: float | None = None
    tpot_s: float | None = None
    e2e_s: float | None = None

    def met(self, r: RequestRecord) -> bool:
        """Whether a request succeeded within every objective."""
        if not r.ok:
            return False
        for limit, value in ((self.ttft_s, r.ttft_s), (self.tpot_s, r.tpot_s), (self.e2e_s, r.e2e_s)):
            if limit is not None and (value is None or value > limit):
                return False
        return True


def _pct(values: Sequence[float], q: float) -> float | None:
    return percentile(values, q)


def block_figures(result: LoadResult, slo: Slo) -> dict[str, float | None]:
    """The named figures of one block (flat, for comparison and history): `ttft_p50_s` …,
    `output_tokens_per_s`, `requests_per_s`, `goodput_rps`, `error_rate`, `lateness_p99_s`."""
    rows = result.measured
    ok = [r for r in rows if r.ok]
    out: dict[str, float | None] = {}
    series = {"ttft": [r.ttft_s for r in ok if r.ttft_s is not None],
              "tpot": [r.tpot_s for r in ok if r.tpot_s is not None],
              "tpot_incl_first": [r.tpot_incl_first_s for r in ok if r.tpot_incl_first_s is not None],
              "itl": [g for r in ok for g in r.itl_s],
              "e2e": [r.e2e_s for r in ok]}
    for name, values in series.items():
        for q in QUANTILES:
            out[f"{name}_p{q}_s"] = _pct(values, q)
    if not rows:
        wall = 0.0
    elif result.profile.kind == "synchronous":
        wall = sum(r.e2e_s for r in rows)
    else:
        wall = max(r.end_s for r in rows) - min(r.sent_s for r in rows)
    out["wall_s"] = wall
    out["output_tokens_per_s"] = sum(r.output_tokens for r in ok) / wall if wall > 0 else None
    out["requests_per_s"] = len(ok) / wall if wall > 0 else None
    out["goodput_rps"] = sum(1 for r in ok if slo.met(r)) / wall if wall > 0 else None
    out["error_rate"] = (len(rows) - len(ok)) / len(rows) if rows else None
    medians = [float(np.median(r.itl_s)) for r in ok if len(r.itl_s) >= 2]
    out["itl_median_s"] = float(np.exp(np.mean(np.log(medians)))) if medians and min(medians) > 0 else None
    tokens = sum(r.output_tokens for r in ok)
    out["cpu_s_per_token"] = result.cpu_s / tokens if result.cpu_s is not None and tokens and result.cpu_s > 0 else None
    decoding = [(r.e2e_s - r.ttft_s, r.output_tokens - 1) for r in ok if r.ttft_s is not None and r.output_tokens >= 2]
    steps = sum(n for _, n in decoding)
    out["decode_s_per_token"] = sum(t for t, _ in decoding) / steps if steps else None
    out["e2e_s_per_token"] = sum(r.e2e_s for r in ok) / tokens if tokens else None
    out["lateness_p99_s"] = result.lateness_p99_s
    out["requests"] = float(len(rows))
    return out
