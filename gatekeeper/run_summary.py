"""summary.json read back into typed values: the one reader of a finished run.

`gatekeeper run` ends by writing `reports/<run-id>/summary.json` (docs/summary-schema.md; written
by report/run/summary_json.py). Whatever reads a run afterwards — `gatekeeper compare`, `report merge`
and a cell's path record, `matrix run` keeping a finished cell, `selftest`, `bisect` and its
`--from` — reads it through `read_summary`, which checks the file against the shipped schema
before it takes anything from it. Each way that can fail is its own `SummaryError`, naming the
file (a `ConfigError`: exit 3 where it ends a command):

- `SummaryMissing`: there is no summary.json (the run died or was cut short before its end, or
  the directory is no run);
- `SummaryUnreadable`: the file cannot be read, or is not JSON;
- `SummaryInvalid`: not a JSON object, or not the schema — a summary without a verdict is one
  (the first violation is named, with where); `SummaryOtherFormat`, one of them: another format
  (a later `gatekeeper.summary/N`).

No reader makes up a verdict for a file that does not state one: each caller says what a
`SummaryError` means for it (a merged cell HOLDs and its note says why; a sweep runs the cell
again; a selftest cell is "not judged").

Within gatekeeper.summary/1 fields are only ever added, so a file from an older release lacks the
later ones, and they read as: `headline` rebuilt as `RunResult.headline` wrote it from the fields
the file keeps; `gatekeeper_version` None; a target's `observed` `{}` and its engine (`identity`)
unknown; a check's `finished_at` "", `undecided` and `near_miss` false. Numbers that summary.json
spells as strings ("NaN", "Infinity", "-Infinity") become floats again. Checks become the
project's own `CheckResult`s (without evidence: that is in records.jsonl).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from gatekeeper.errors import ConfigError
from gatekeeper.report.serialise import limit_of
from gatekeeper.results import CheckResult, Judgement, Status, Verdict

SUMMARY_FILE = "summary.json"
SUMMARY_FORMAT = "gatekeeper.summary/1"  # the major version this reader understands
_NON_FINITE = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


class SummaryError(ConfigError):
    """A run directory's summary.json could not be read as a summary; `summary` is the file."""

    def __init__(self, summary: Path, why: str, hint: str | None = None) -> None:
        super().__init__(why, path=str(summary), hint=hint)
        self.summary, self.why = summary, why


class SummaryMissing(SummaryError):
    """There is no summary.json: the run died or was cut short, or the directory is no run."""


class SummaryUnreadable(SummaryError):
    """summary.json is there but cannot be read, or is not JSON."""


class SummaryInvalid(SummaryError):
    """summary.json is JSON but not a gatekeeper.summary/1 document (no verdict, a check without a status...)."""


class SummaryOtherFormat(SummaryInvalid):
    """summary.json declares another format than the one this reader understands (a later major version)."""


@dataclass(frozen=True)
class SummaryTarget:
    """One target as summary.json keeps it (`targets[]`)."""

    role: str  # "reference" | "candidate"
    description: str
    model: str
    version: str | None  # what /version answered; None when it has none or gate 1 did not run
    declared: dict[str, Any] = field(default_factory=dict)  # the execution path the user declared
    observed: dict[str, Any] = field(default_factory=dict)  # the path the target stated; {} in older files
    engine: str | None = None  # its engine as `identity` names it; None where the run wrote no identity

    @property
    def line(self) -> str:
        """The target as a comparison names it: its engine (where known) or its description, and its /version answer."""
        engine = f"{self.engine}: " if self.engine else ""
        return engine + self.description + (f" (version {self.version})" if self.version else "")


@dataclass(frozen=True)
class SummaryGate:
    """One gate of the run: its status and its checks, in run order."""

    id: str
    status: Status
    checks: tuple[CheckResult, ...]


@dataclass(frozen=True, kw_only=True)
class RunSummary:
    """One finished run: what was run, what it decided, every gate and check."""

    path: Path  # the run directory
    run_id: str
    verdict: Verdict
    headline: str  # the verdict as the run's reports show it: "PROMOTE (partial: 2 of 6 gates ran)"
    reasons: tuple[str, ...]
    policy: str
    golden_sets: tuple[str, ...]
    seed: int
    gatekeeper_version: str | None  # None in files older than the field
    left_out: tuple[str, ...]  # what a partial run left out: the gates not run, then what its flags restricted
    started_at: str  # ISO 8601 (UTC)
    finished_at: str
    targets: tuple[SummaryTarget, ...]
    gates: tuple[SummaryGate, ...]  # in stage order

    @property
    def checks(self) -> tuple[CheckResult, ...]:
        """Every check, in run order (no evidence)."""
        return tuple(c for g in self.gates for c in g.checks)

    def check(self, check_id: str) -> CheckResult | None:
        """The check with this id, if the run has one."""
        return next((c for c in self.checks if c.id == check_id), None)

    def target(self, role: str) -> SummaryTarget | None:
        """The target in this role ("reference" or "candidate"), if the run has one."""
        return next((t for t in self.targets if t.role == role), None)

    @property
    def candidate(self) -> str:
        """The candidate as a comparison names it ("–" when the run has none)."""
        target = self.target("candidate")
        return target.line if target else "–"

    @property
    def reference(self) -> str:
        """The reference, as the candidate: part of the plan (a run against another reference is not like for like)."""
        target = self.target("reference")
        return target.line if target else "–"


def read_summary(run_dir: Path) -> RunSummary:
    """The run in `run_dir`, from its summary.json; raises a `SummaryError` naming why not."""
    doc = read_document(run_dir / SUMMARY_FILE)
    try:
        return _summary(run_dir, doc)
    except (KeyError, TypeError, ValueError) as e:  # the schema lets through what it does not constrain
        raise SummaryInvalid(run_dir / SUMMARY_FILE, f"not a gatekeeper summary ({type(e).__name__}: {e})") from None


def read_document(summary: Path) -> dict[str, Any]:
    """summary.json as JSON checked against the shipped schema (raises a `SummaryError`)."""
    if not summary.is_file():
        raise SummaryMissing(summary, "no such file (the run died or was cut short before its end)")
    try:
        doc = json.loads(summary.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise SummaryUnreadable(summary, f"cannot be read ({e})") from None
    except ValueError as e:
        raise SummaryUnreadable(summary, f"not JSON ({e})") from None
    if not isinstance(doc, dict):
        raise SummaryInvalid(summary, "not a gatekeeper summary (a JSON object is expected)")
    if doc.get("format") != SUMMARY_FORMAT:
        raise SummaryOtherFormat(summary, f"format {doc.get('format')!r}, not {SUMMARY_FORMAT!r}",
                                 hint="read runs with the gatekeeper release that wrote them")
    import jsonschema

    error = jsonschema.exceptions.best_match(_validator().iter_errors(doc))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "top level"
        raise SummaryInvalid(summary, f"not a gatekeeper summary (at {where}: {error.message[:200]})")
    return doc


@lru_cache(maxsize=1)
def _validator() -> Any:
    """The shipped schema's validator (built once: a sweep reads many summaries)."""
    import jsonschema

    from gatekeeper import schemas

    return jsonschema.Draft202012Validator(schemas.load("summary.schema.json"))


def _summary(run_dir: Path, doc: dict[str, Any]) -> RunSummary:
    gates = tuple(SummaryGate(g["id"], Status(g["status"]), tuple(_check(c, g["id"]) for c in g["checks"]))
                  for g in doc["gates"])
    identity = doc.get("identity") or {}
    targets = tuple(SummaryTarget(t["role"], t["description"], t["model"], t["version"], dict(t["declared"]),
                                  dict(t.get("observed") or {}), (identity.get(t["role"]) or {}).get("engine") or None)
                    for t in doc["targets"])
    return RunSummary(path=run_dir, run_id=doc["run_id"], verdict=Verdict(doc["verdict"]), headline=_headline(doc),
                      reasons=tuple(doc["reasons"]), policy=doc["policy"], golden_sets=tuple(doc["golden_sets"]),
                      seed=doc["seed"], gatekeeper_version=doc.get("gatekeeper_version"), left_out=_left_out(doc),
                      started_at=doc["started_at"], finished_at=doc["finished_at"], targets=targets, gates=gates)


def _headline(doc: dict[str, Any]) -> str:
    """The run's headline: summary.json's own, or for a file written before it had one, rebuilt as
    `RunResult.headline` writes it from the fields it keeps."""
    if isinstance(doc.get("headline"), str):
        return str(doc["headline"])
    not_run, total = len(doc.get("gates_not_run", ())), len(doc["gates"])
    said = ([f"{total - not_run} of {total} gates ran"] if not_run else []) + [str(r) for r in doc.get("restricted", ())]
    return str(doc["verdict"]) + (f" (partial: {'; '.join(said)})" if said else "")


def _left_out(doc: dict[str, Any]) -> tuple[str, ...]:
    gates = tuple(f"gate {g['id']} ({g['why']})" for g in doc.get("gates_not_run", ()))
    return gates + tuple(str(r) for r in doc.get("restricted", ()))


def _check(c: dict[str, Any], gate: str) -> CheckResult:
    return CheckResult(id=c["id"], gate=gate, status=Status(c["status"]), blocking=c["blocking"], reason=c["reason"],
                       metrics=_numbers(c["metrics"]), family=c.get("family"), duration_s=c["duration_s"],
                       judgement=Judgement(c["judgement"]), undecided=bool(c.get("undecided", False)), finished_at=c.get("finished_at", ""),
                       near_miss=bool(c.get("near_miss", False)), detection_limit=limit_of(c.get("detection_limit")))


def _numbers(value: Any) -> Any:
    """summary.json's strict-JSON spelling of non-finite floats, undone (at any depth)."""
    if isinstance(value, str):
        return _NON_FINITE.get(value, value)
    if isinstance(value, dict):
        return {k: _numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_numbers(v) for v in value]
    return value
