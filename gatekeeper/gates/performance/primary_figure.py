"""Which figure the primary test decides on: the policy's `primary_figure`, named before anything
is measured and stated in the report.

Two figures, both per output token at concurrency 1 (`perf/figures.py`):
- **decode** (`decode_s_per_token`, the default): the time after the first streamed chunk — the
  decode figure the materiality speaks of, where the first chunk marks the end of prefill;
- **request** (`e2e_s_per_token`): the whole request's time, prefill included. It needs only the
  send and the last byte.

vLLM's CPU build splits a request's time between its first chunk and the rest differently from
request to request (client TTFT and decode time correlated −0.81 over 240 requests of two
0.31.0 launches on this VM): its decode figure spread by sd 0.28–0.77 in log ratio per block
pair, its request figure by 0.11–0.22, and a same-build run on the decode figure stayed
undecided after 12 rounds where the request figure PASSed in 3–9. A policy for vLLM names
"request" (docs/vllm.md); its materiality is then one of request time (a decode regression shows
diluted by prefill's share: about half of vLLM's request time here, a fifth of the bundled
engine's). Chunk timing cannot choose for the user: the bundled engine's chunks arrive in bursts
(gaps under a tenth of their request's median) as often as vLLM's, 4–10% of its gaps against
2–6%, yet its decode figure spreads by only 8–11%.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Figure:
    """A primary figure: its key in the block figures and its name in the report."""

    metric: str
    name: str


DECODE = Figure("decode_s_per_token", "decode seconds per output token")
REQUEST = Figure("e2e_s_per_token", "request seconds per output token")
FIGURES = {"decode": DECODE, "request": REQUEST}


def named(setting: str) -> Figure:
    """The figure the policy's `primary_figure` names ("decode" or "request")."""
    return FIGURES[setting]
