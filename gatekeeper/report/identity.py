"""Who was compared, in one line: each target's engine and version, how it was reached, the
model, and where the two targets' stated execution paths differ.

"reference vLLM 0.31.0 (launch) → candidate vLLM 0.32.0 (launch), model gk-tiny; stated path
differs in: engine_version 0.31.0 → 0.32.0". The console's verdict, summary.md, both pages and
summary.json (`identity`) start with it, so a reader of any of them knows which builds the
verdict is about before reading why.

An engine is named by what it says about itself: vLLM by its log's engine line (the `engine_version`
gate 1 reads), the bundled engine by being bundled; otherwise by what `/version` answered, or
"version unknown". Path keys are the ones gate 1 read from each target's log and `/metrics`
(`TargetInfo.observed`); a key only one side states is listed apart (the other may simply not
print it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gatekeeper.json_types import JsonObject
from gatekeeper.results import TargetInfo


@dataclass(frozen=True)
class TargetIdentity:
    """One target as the identity line names it."""

    role: str
    engine: str  # "vLLM 0.32.0", "bundled engine 0.1.0 (optimized faults=nan-residue)", "version 1.2", "version unknown"
    kind: str  # how gatekeeper reached it: bundled, url, launch
    model: str

    @property
    def text(self) -> str:
        """e.g. "candidate vLLM 0.32.0 (launch)"; a bundled engine says it is bundled already."""
        return f"{self.role} {self.engine}" + ("" if self.kind == "bundled" else f" ({self.kind})")


@dataclass(frozen=True)
class Identity:
    """Both targets and where their stated paths differ: (key, reference's, candidate's) with a
    value on each side, and the keys only one side states."""

    reference: TargetIdentity
    candidate: TargetIdentity
    differs: tuple[tuple[str, str, str], ...] = ()
    only_reference: tuple[str, ...] = ()
    only_candidate: tuple[str, ...] = ()

    @property
    def line(self) -> str:
        """The one line every report starts with."""
        ref, cand = self.reference, self.candidate
        model = f"model {ref.model}" if ref.model == cand.model else f"models {ref.model} → {cand.model}"
        path = ("stated path differs in: " + ", ".join(f"{k} {a} → {b}" for k, a, b in self.differs)
                if self.differs else "stated paths agree where both state them")
        alone = [f"only the {role} states {', '.join(keys)}" for role, keys in
                 (("reference", self.only_reference), ("candidate", self.only_candidate)) if keys]
        return f"{ref.text} → {cand.text}, {model}; " + "; ".join([path, *alone])

    def to_json(self) -> JsonObject:
        """summary.json's `identity`."""
        return {"line": self.line,
                **{t.role: {"engine": t.engine, "kind": t.kind, "model": t.model} for t in (self.reference, self.candidate)},
                "path_differs": [{"key": k, "reference": a, "candidate": b} for k, a, b in self.differs],
                "only_reference": list(self.only_reference), "only_candidate": list(self.only_candidate)}


def identify(targets: Sequence[TargetInfo]) -> Identity | None:
    """The identity of a run's two targets (None unless both are there)."""
    by_role = {t.role: t for t in targets}
    if "reference" not in by_role or "candidate" not in by_role:
        return None
    ref, cand = by_role["reference"], by_role["candidate"]
    a, b = dict(ref.observed), dict(cand.observed)
    return Identity(_target(ref), _target(cand),
                    tuple((k, a[k], b[k]) for k in sorted(a.keys() & b.keys()) if a[k] != b[k]),
                    tuple(sorted(a.keys() - b.keys())), tuple(sorted(b.keys() - a.keys())))


def _target(t: TargetInfo) -> TargetIdentity:
    observed = dict(t.observed)
    if t.kind == "bundled":
        setup = t.description.removeprefix("bundled:")
        engine = f"bundled engine {t.version or ''}".rstrip() + (f" ({setup})" if setup else "")
    elif "engine_version" in observed:
        engine = f"vLLM {observed['engine_version']}"
    else:
        engine = f"version {t.version}" if t.version else "version unknown"
    return TargetIdentity(t.role, engine, t.kind, t.model)
