"""A finding: what one gate check found, as a frozen value whose fields are the check's metric
keys. Each gate declares its findings in its `checks.py` (the performance gate's, gate 4's...).

The gate builds the finding and hands it to `GateContext.check`, which records `finding.metrics()`
as the check's `CheckResult.metrics` (it takes no dict);
whatever reads the check (the correctness table, performance.html's table, a stored
summary.json) reads it back with `TheFinding.of(check)`. Each key is written once, as a field name, so renaming a field renames
its key for the writer and every reader at once, and a reader that names a field the finding
does not have fails mypy instead of blanking a report cell.

How the fields become metrics, in field order:

- a nested finding is written as an object (its own `metrics()`), and read back through the
  class its field declares (`nested(Cls)`); a mapping of them (`nested_map(Cls)`) as an object
  of objects, a sequence of them (`nested_tuple(Cls)`) as a list of objects;
- a field whose key would shadow a name of `Finding` itself (`metrics`) declares the key it is
  written as (`nested_tuple(Cls, written_as="metrics")`);
- a tuple is written as a list (JSON has no tuples) unless the field is a `PAIR` (an interval,
  kept a tuple as the statistics return it); a list read back becomes a tuple;
- a field declared `OPTIONAL` is left out while it is None (a key only some outcomes carry);
- a finding that is not `complete()` (the check compared nothing) writes only its `KEY` fields.

A key the metrics lack reads as the field's default, else None: a summary.json from an older
release, or a check that wrote the short form, reads without error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, Self

from gatekeeper.results import CheckResult

OPTIONAL = {"optional": True}
"""Field metadata: left out of the metrics while None."""
PAIR = {"pair": True}
"""Field metadata: a two-number interval, written as the tuple it is."""
KEY = {"key": True}
"""Field metadata: written even when the finding is not `complete()` (what it is about)."""


def nested(cls: type[Finding], optional: bool = False) -> Any:
    """A field holding a nested finding of `cls` (None by default; `optional`: left out while None)."""
    return field(default=None, metadata={"nested": cls, "optional": optional})


def nested_map(cls: type[Finding]) -> Any:
    """A field holding a mapping of names to nested findings of `cls` (empty by default)."""
    return field(default_factory=dict, metadata={"each": cls})


def nested_tuple(cls: type[Finding], written_as: str | None = None) -> Any:
    """A field holding a sequence of nested findings of `cls` (empty by default), written as a list
    of objects under its own name, or `written_as`."""
    return field(default=(), metadata={"items": cls, **({"as": written_as} if written_as else {})})


@dataclass(frozen=True)
class Finding:
    """The base of every gate's findings: `metrics()` writes one, `of` reads one back."""

    def complete(self) -> bool:
        """Whether the check compared anything (False: only the `KEY` fields are written)."""
        return True

    def metrics(self) -> dict[str, object]:
        """The finding as `CheckResult.metrics` (the module docstring says how)."""
        written: dict[str, object] = {}
        brief = not self.complete()
        for f in fields(self):
            value = getattr(self, f.name)
            if (brief and not f.metadata.get("key")) or (value is None and f.metadata.get("optional")):
                continue
            written[f.metadata.get("as", f.name)] = _written(value, bool(f.metadata.get("pair")))
        return written

    @classmethod
    def from_metrics(cls, metrics: Mapping[str, Any]) -> Self:
        """The finding that `metrics` (recorded by the gate, or read from summary.json) describe."""
        values: dict[str, object] = {}
        for f in fields(cls):
            key = f.metadata.get("as", f.name)
            if key in metrics:
                values[f.name] = _read(metrics[key], f.metadata.get("nested"), f.metadata.get("each"), f.metadata.get("items"))
            elif f.default is MISSING and f.default_factory is MISSING:
                values[f.name] = None
        return cls(**values)

    @classmethod
    def of(cls, check: CheckResult) -> Self:
        """The finding of a recorded `check`."""
        return cls.from_metrics(check.metrics)


@dataclass(frozen=True, kw_only=True)
class RequestFailed(Finding):
    """A check whose request failed (`GateContext.error_check`; startup's `health`, `canary`): the
    failure's kind and HTTP status (None: no answer)."""

    error_kind: str
    status_code: int | None


@dataclass(frozen=True, kw_only=True)
class RefusedByBoth(RequestFailed):
    """A check whose requests both targets refused alike (`GateContext.refused_by_both`): the
    refusal, and how many items were not asked."""

    refused_by_both: int


@dataclass(frozen=True, kw_only=True)
class LostCapability(Finding):
    """A check skipped for want of a capability (`GateContext.skip_missing`): the feature, when it
    is one the candidate lost (gate 1's finding); nothing when only the reference lacks it."""

    lost: str | None = field(default=None, metadata=OPTIONAL)


def _written(value: object, pair: bool) -> object:
    if isinstance(value, Finding):
        return value.metrics()
    if isinstance(value, tuple) and not pair:
        return [v.metrics() if isinstance(v, Finding) else v for v in value]
    if isinstance(value, Mapping):
        return {k: v.metrics() if isinstance(v, Finding) else v for k, v in value.items()}
    return value


def _read(value: object, cls: type[Finding] | None, each: type[Finding] | None = None,
          items: type[Finding] | None = None) -> object:
    if cls is not None:
        return cls.from_metrics(value) if isinstance(value, Mapping) else None
    if each is not None:
        return {k: each.from_metrics(v) for k, v in value.items() if isinstance(v, Mapping)} if isinstance(value, Mapping) else {}
    if items is not None:
        return tuple(items.from_metrics(v) for v in value if isinstance(v, Mapping)) if isinstance(value, list) else ()
    if isinstance(value, list):
        return tuple(tuple(v) if isinstance(v, list) else v for v in value)
    return value
