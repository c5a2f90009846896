"""What an endpoint supports: the frozen value the capability probe (`probe.py`) returns.

A check that needs a missing capability is a SKIP with the probe's reason, never a silent pass.
Gate 1 runs the probe after its canary and reports it; the run keeps the value, every later gate
reads it (`GateContext.capabilities`) and the report shows it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from gatekeeper.json_types import JsonObject


@dataclass(frozen=True)
class Capabilities:
    """One endpoint's features (True: it works), `top_logprobs_max` (0 when logprobs are off),
    `notes` saying why a feature is off, `errors` for probe requests whose exchange broke, and
    `protocol_warnings` for tolerated deviations, `retried` for transient failures (502/503/504)
    the probe asked again and got past."""

    chat: bool = False
    completions: bool = False
    logprobs: bool = False
    echo: bool = False
    prompt_logprobs: bool = False
    tools: bool = False
    tool_parsing: bool = False  # a tool call the model wrote comes back as `tool_calls`, not as text
    streaming: bool = False
    stream_finish_reason: bool = False  # a stream's last choice delta carries `finish_reason`
    tokenize: bool = False
    top_logprobs_max: int = 0
    notes: dict[str, str] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    protocol_warnings: tuple[str, ...] = ()
    retried: tuple[str, ...] = ()

    @classmethod
    def unavailable(cls, why: str) -> Capabilities:
        """The capabilities of a target that could not be probed at all (every feature off)."""
        return cls(notes={name: why for name in FEATURES})

    def note(self, feature: str) -> str:
        """Why `feature` is off ("" when it is on or no reason was recorded)."""
        return self.notes.get(feature, "")

    def undetermined(self, feature: str) -> bool:
        """Whether the probe could not tell if `feature` works (e.g. the model wrote no tool call
        to parse): off, but not evidence that it is missing."""
        return self.note(feature).startswith(UNDETERMINED)

    def missing(self) -> list[str]:
        """The features this endpoint lacks, in FEATURES order."""
        return [name for name in FEATURES if not getattr(self, name)]

    def to_dict(self) -> JsonObject:
        """JSON-ready form (summary.json's `targets[].capabilities`)."""
        return {"notes": dict(self.notes), "errors": dict(self.errors), "protocol_warnings": list(self.protocol_warnings),
                "retried": list(self.retried),
                **{name: getattr(self, name) for name in FEATURES}, "top_logprobs_max": self.top_logprobs_max}


FEATURES: tuple[str, ...] = tuple(f.name for f in fields(Capabilities) if f.type in ("bool", bool))
UNDETERMINED = "undetermined: "  # the prefix of a note for a feature the probe could not establish either way


def lost(reference: Capabilities, candidate: Capabilities) -> list[str]:
    """The features the reference has and the candidate lacks, in FEATURES order; a feature the
    probe could not establish on the candidate is not counted as lost."""
    return [n for n in FEATURES if getattr(reference, n) and not getattr(candidate, n) and not candidate.undetermined(n)]
