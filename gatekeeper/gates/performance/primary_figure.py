"""Which figure the primary test decides on, fixed before the first measured pair.

Two figures, both per output token at concurrency 1 (`perf/figures.py`):
- **decode** (`decode_s_per_token`): the time after the first streamed chunk. The decode figure
  the materiality speaks of — but only where the stream arrives a chunk per decode step;
- **request** (`e2e_s_per_token`): the whole request's time, prefill included. It needs only the
  send and the last byte, so a server that delivers its stream in bursts cannot move it.

The policy's `primary_figure` names one, or "auto": decode, unless the first round's warm-up
saw bursts (`BURSTS` of either side's chunk gaps: several chunks arriving together after a
stall) — then the split between first token and decode is the delivery's, not the engine's.
vLLM's CPU build burst in 2–4% of its gaps on this VM and the bundled engine in none; the 4
warm-up answers per side can miss a server that bursts rarely, so a policy for vLLM names
"request" (docs/vllm.md). The choice is made on unmeasured requests and stated in the report.
"""

from __future__ import annotations

from dataclasses import dataclass

from gatekeeper.gates.performance.measure import WarmUp

BURSTS = 0.01  # a warm-up burst share from which "auto" takes the request figure


@dataclass(frozen=True)
class Figure:
    """A primary figure: its key in the block figures and its name in the report."""

    metric: str
    name: str


DECODE = Figure("decode_s_per_token", "decode seconds per output token")
REQUEST = Figure("e2e_s_per_token", "request seconds per output token")
FIGURES = {"decode": DECODE, "request": REQUEST}


def choose(setting: str, warm: WarmUp) -> tuple[Figure, str]:
    """The figure for `setting` ("auto", "decode" or "request") after the first warm-up, and why."""
    if setting != "auto":
        return FIGURES[setting], "named by the policy (primary_figure)"
    seen = {side: share for side, share in warm.bursts.items() if share is not None}
    shown = ", ".join(f"{side} {share:.1%}" for side, share in seen.items()) or "no stream to look at"
    if any(share >= BURSTS for share in seen.values()):
        return REQUEST, (f"the warm-up's streams arrived in bursts ({shown} of chunk gaps under a tenth of their "
                         f"request's median): the time after the first chunk is the delivery's, not the engine's")
    return DECODE, f"the warm-up's streams arrived a chunk at a time (bursts: {shown})"
