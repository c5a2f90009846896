"""What `gatekeeper run --dry-run` asks a URL target before the run: does it answer, does it want
a key it was not given (or refuse the one it was given), and how fast one short answer comes —
the speed the duration estimate of the reference's load is scaled by.

Two requests per URL target at most: GET /v1/models, and for the reference one streamed chat
completion of `PROBE_TOKENS` tokens. Nothing else is sent; bundled and launched targets are not
started by a dry run, so they are not asked.

A target whose models request is refused at the door — no connection, no answer within
`PROBE_TIMEOUT_S`, or HTTP 401/403 (no key, or the wrong one) — is `unusable`: no run could ask
it anything, so the dry run ends with exit 3 (`exit_codes.USAGE`) after printing the plan. Any
other failed answer (a 404, a 500, a body that is not JSON) stays a warning: the run itself
judges it.
"""

from __future__ import annotations

from dataclasses import dataclass

from gatekeeper.endpoints.client import Endpoint
from gatekeeper.errors import EndpointError
from gatekeeper.targets.interface import TargetSpec

PROBE_TOKENS = 16
PROBE_TIMEOUT_S = 15.0
UNUSABLE_KINDS = frozenset({"connect", "timeout", "auth"})  # EndpointError kinds no run gets past


@dataclass(frozen=True)
class Speed:
    """One short answer's timing at concurrency 1: time to the first token and per output token after it."""

    ttft_s: float
    per_token_s: float

    def request_s(self, output_tokens: int) -> float:
        """The time one request of `output_tokens` tokens takes at this speed."""
        return self.ttft_s + max(output_tokens - 1, 0) * self.per_token_s

    def describe(self) -> str:
        """e.g. "TTFT 0.120 s, 21 ms per token"."""
        return f"TTFT {self.ttft_s:.3f} s, {self.per_token_s * 1000:.0f} ms per token"


@dataclass(frozen=True)
class Probe:
    """What one URL target answered a dry run.

    `warning`: the one line to print about it, if any; `unusable`: that line says no run could use
    the target (unreachable, or refusing its key: `UNUSABLE_KINDS`); `speed`: one short streamed
    answer's speed, when asked for and measured."""

    warning: str | None = None
    unusable: bool = False
    speed: Speed | None = None


def probe(role: str, spec: TargetSpec, timed: bool) -> Probe:
    """Ask one URL target for its models (unreachable? 401/403 with or without a key?) and, when
    `timed`, for one short streamed answer to measure its speed."""
    ep = Endpoint(role, spec.url or "", spec.model or "", spec.api_key(), timeout_s=PROBE_TIMEOUT_S, transient_attempts=1,
                  key_source=spec.key_source)
    try:
        try:
            listed = ep.get_json("/v1/models").get("data") or []
        except EndpointError as e:
            return Probe(_why(role, spec, e), unusable=e.kind in UNUSABLE_KINDS)
        if not ep.model and isinstance(listed, list) and listed and isinstance(listed[0], dict):
            ep.model = str(listed[0].get("id", ""))
        if not timed:
            return Probe()
        try:
            ep.chat([{"role": "user", "content": "Count from one to twenty in words."}], max_tokens=PROBE_TOKENS, stream=True)
        except EndpointError as e:
            return Probe(f"{role}: one short chat completion failed ({e.kind}: {e.detail[:200]}); no duration estimate")
        t = ep.timings[-1] if ep.timings else None
        if t is None or t.ttft_s is None or t.output_tokens < 2:
            return Probe()
        return Probe(speed=Speed(t.ttft_s, (t.e2e_s - t.ttft_s) / (t.output_tokens - 1)))
    finally:
        ep.close()


def _why(role: str, spec: TargetSpec, e: EndpointError) -> str:
    """One warning line for a target that did not list its models."""
    if e.kind == "auth":
        if spec.api_key_env is None:
            return (f"{role}: {spec.url} answers HTTP {e.status} without an API key; name the variable holding it with "
                    f"--{role}-key-env NAME")
        if not spec.api_key():
            return f"{role}: {spec.url} answers HTTP {e.status} and the variable {spec.api_key_env} is empty or not set"
        return f"{role}: {spec.url} refuses the key from {spec.api_key_env} (HTTP {e.status})"
    return f"{role}: {spec.url} did not answer GET /v1/models ({e.kind}: {e.detail[:200]}); the run would not start it"
