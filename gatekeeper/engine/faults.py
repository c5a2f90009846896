"""Named fault switches: real code paths in the optimized engine that re-create the bug classes of
docs/bug-classes.md.

Each is off by default and harmful only under its trigger. `--fault NAME[=VALUE]` turns one on;
`gatekeeper faults` lists them with the bug class each models.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gatekeeper.engine.errors import EngineOptionError


@dataclass(frozen=True)
class Fault:
    """One fault switch: its name, the bug class it models, its trigger and value (with the
    range it may take: `whole` values are counts)."""

    name: str
    models: str
    trigger: str
    takes_value: bool = False
    default_value: float | None = None
    value_range: tuple[float, float] = (0.0, 0.0)
    whole: bool = False

    def check(self, value: float) -> None:
        """EngineOptionError unless `value` is finite, in range and (for counts) whole."""
        low, high = self.value_range
        if not (math.isfinite(value) and low <= value <= high) or (self.whole and not value.is_integer()):
            kind = "a whole number" if self.whole else "a number"
            raise EngineOptionError(f"fault {self.name!r}: value {value:g} must be {kind} from {_num(low)} to {_num(high)}")


def _num(x: float) -> str:
    return str(int(x)) if x.is_integer() else f"{x:g}"


MISREAD_MIN_BATCH = 6  # sporadic-corruption: the smallest decode batch in which a hit request misreads

FAULTS: dict[str, Fault] = {
    f.name: f
    for f in (
        Fault(
            "kv-stale-reuse",
            "docs/bug-classes.md#kv-cache-reuse: a prefix-cache entry maps to a KV block another sequence has since overwritten",
            "prefix caching on, cache pressure (many concurrent sessions), prompts re-sent with shared prefixes",
        ),
        Fault(
            "nan-residue",
            "docs/bug-classes.md#nan-residue: freed blocks keep non-finite scratch values and masking multiplies by zero",
            "a request that reuses a previously freed KV block",
        ),
        Fault(
            "fused-norm-dtype",
            "docs/bug-classes.md#fused-norm-dtype: the fused residual+RMSNorm path skips its dtype guard",
            "fused_norm with bf16/fp16 activations, fp32 norm weights and tp > 1",
        ),
        Fault(
            "eos-ignored",
            "the batched decode path ignores EOS and stop tokens",
            "any decode step that samples an end-of-sequence or stop token",
        ),
        Fault(
            "tool-parser-partial",
            "docs/bug-classes.md#tool-parser-partial: the streaming tool-call parser leaks partial delimiters / broken argument deltas",
            "streamed chat completions that contain tool calls",
        ),
        Fault(
            "decode-slowdown",
            "docs/bug-classes.md#decode-regression: a dependency bump makes decode take PCT percent longer",
            "every decode step",
            takes_value=True,
            default_value=25.0,
            value_range=(0.0, 10_000.0),
        ),
        Fault(
            "optional-import",
            "docs/bug-classes.md#optional-import: startup imports an absent optional dependency and dies",
            "always, at startup",
        ),
        Fault(
            "silent-fallback",
            "attention quietly takes a slower path and logs a warning",
            "always, at startup and on every step",
        ),
        Fault(
            "late-decode-corrupt",
            "the decode path's slot mapping goes off by one once a sequence has generated VALUE tokens: each new "
            "token's K/V overwrites the previous token's slot",
            "decode steps of answers longer than VALUE tokens (short answers are untouched)",
            takes_value=True,
            default_value=64.0,
            value_range=(1.0, 1_000_000.0),
            whole=True,
        ),
        Fault(
            "sporadic-corruption",
            "docs/bug-classes.md#production-load: under production load the batched decode path reads one wrong KV block (another "
            "sequence's) for a request, garbling the rest of its answer; each request is hit with probability VALUE",
            f"decode steps batching at least {MISREAD_MIN_BATCH} sequences (real traffic's load; the offline gates "
            "batch fewer), for a request drawn with probability VALUE",
            takes_value=True,
            default_value=0.03,
            value_range=(0.0, 1.0),
        ),
        Fault(
            "grammar-mask-misalign",
            "the batched sampler applies the grammar bitmasks by their packed index, not the sequence's row: "
            "in a batch that mixes constrained and free requests the masks land on the wrong sequences",
            "a decode batch holding a free request ahead of a constrained one (single requests are unaffected)",
        ),
        Fault(
            "close-call-shift",
            "docs/bug-classes.md#close-call-shift: a kernel's rounding favours the runner-up: every decode step's "
            "second most likely token gains VALUE nats, so greedy decoding flips each close call (a gap under VALUE) "
            "its way, and the returned logprobs show the shifted distribution",
            "every decode step (prompt logprobs are untouched)",
            takes_value=True,
            default_value=1.0,
            value_range=(0.0, 10.0),
        ),
        Fault(
            "tool-overflow",
            "a request offering more than VALUE tools has the tools beyond the first VALUE dropped from its prompt "
            "(a prompt-budget rule in the template path): only tenants with wide tool menus are hit",
            "chat requests with more than VALUE tools",
            takes_value=True,
            default_value=4.0,
            value_range=(0.0, 1000.0),
            whole=True,
        ),
        Fault(
            "seeded-batch-dies",
            "docs/bug-classes.md#seeded-batch-death: per-request state mishandled when the scheduler batches the request: "
            "the engine core dies on a seeded, sampled request prefilled beside others (vLLM 0.31/0.32's CPU engine: "
            "\"CPU Generator does not use offset\"), and every later request fails",
            "a seeded, sampled request prefilled while another request is in the engine (one at a time is unaffected)",
        ),
        Fault(
            "rope-drift",
            "docs/bug-classes.md#rope-theta: the engine uses a rope theta other than the checkpoint's (VALUE = factor)",
            "long contexts (positions far from 0)",
            takes_value=True,
            default_value=0.5,
            value_range=(0.01, 100.0),
        ),
    )
}


@dataclass(frozen=True)
class FaultSet:
    """The faults active in one engine, with their values."""

    values: tuple[tuple[str, float | None], ...] = ()

    @classmethod
    def parse(cls, specs: list[str] | tuple[str, ...]) -> "FaultSet":
        """Parse `NAME` / `NAME=VALUE` specs; unknown names and bad values raise EngineOptionError."""
        out: dict[str, float | None] = {}
        for spec in specs:
            name, _, raw = spec.partition("=")
            name = name.strip()
            fault = FAULTS.get(name)
            if fault is None:
                raise EngineOptionError(f"unknown fault {name!r} (known: {', '.join(FAULTS)})")
            if raw and not fault.takes_value:
                raise EngineOptionError(f"fault {name!r} takes no value")
            try:
                value = float(raw) if raw else fault.default_value
            except ValueError:
                raise EngineOptionError(f"fault {name!r}: value {raw!r} is not a number") from None
            if value is not None:
                fault.check(value)
            out[name] = value
        return cls(tuple(sorted(out.items())))

    def __contains__(self, name: str) -> bool:
        assert name in FAULTS, name
        return any(n == name for n, _ in self.values)

    def value(self, name: str) -> float | None:
        """The value of an active fault (None if off or valueless)."""
        return dict(self.values).get(name)

    @property
    def names(self) -> list[str]:
        """Names of the active faults."""
        return [n for n, _ in self.values]
