"""A finished run directory read into typed values, for `gatekeeper compare`.

A run directory is what `gatekeeper run` leaves in `reports/<run-id>/`. Its summary.json
(docs/summary-schema.md) holds everything a comparison needs — every check's status, reason and
metrics — and is checked against the shipped schema before anything is read from it; the
evidence in records.jsonl is not compared. Every way the input can be wrong is a `ConfigError`
(exit 3) naming the directory or the file:

- the path does not exist or is not a directory;
- the directory still holds `incomplete.json` (run_dir.py): the run is running, was killed or
  crashed, so its reports are missing or stale — it is refused, with the command that resumes it;
- there is no summary.json (not a run directory);
- summary.json cannot be read, is not JSON, is another format (a later `gatekeeper.summary/N`),
  or does not match the schema (the first violation is named, with where it is).

Checks become the project's own `CheckResult`s (without evidence); numbers that summary.json
spells as strings ("NaN", "Infinity") become floats again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gatekeeper.errors import ConfigError
from gatekeeper.results import CheckResult, Judgement, Status, Verdict
from gatekeeper.run.run_dir import INCOMPLETE

SUMMARY = "summary.json"
SUMMARY_FORMAT = "gatekeeper.summary/1"  # the major version this reader understands
_NON_FINITE = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}
_HINT = "give a run directory that `gatekeeper run` finished, e.g. reports/<run-id>"


@dataclass(frozen=True)
class RunSummary:
    """One finished run as the comparison needs it: what was run, what it decided, every check."""

    path: Path
    run_id: str
    verdict: Verdict
    headline: str  # the verdict as the run's reports show it: "PROMOTE (partial: 2 of 6 gates ran)"
    reasons: tuple[str, ...]
    policy: str
    golden_sets: tuple[str, ...]
    seed: int
    gatekeeper_version: str | None  # None in files older than the field
    left_out: tuple[str, ...]  # what a partial run left out: the gates not run, then what its flags restricted
    candidate: str  # the candidate target's description, with its /version answer when it gave one
    checks: tuple[CheckResult, ...]  # in run order; no evidence
    reference: str = "–"  # the reference, as the candidate: part of the plan (a run against another reference is not like for like)

    def check(self, check_id: str) -> CheckResult | None:
        """The check with this id, if the run has one."""
        return next((c for c in self.checks if c.id == check_id), None)


def load_run(path: Path, role: str) -> RunSummary:
    """The finished run in directory `path`; `role` ("A" or "B") names it in error messages."""
    if not path.exists():
        raise ConfigError(f"{role} {path}: no such directory", hint=_HINT)
    if not path.is_dir():
        raise ConfigError(f"{role} {path}: not a directory", hint=_HINT)
    if (path / INCOMPLETE).exists():
        raise ConfigError(f"{role} {path}: an unfinished run ({INCOMPLETE} is there: it is running, was killed or "
                          f"crashed), so its reports are missing or stale",
                          hint=f"finish it with `gatekeeper run <the same options> --resume {path}`, or compare another run")
    summary = path / SUMMARY
    if not summary.is_file():
        raise ConfigError(f"{role} {path}: not a run directory (no {SUMMARY})", hint=_HINT)
    doc = _read(summary, role)
    try:
        return _summary(path, doc)
    except (KeyError, TypeError, ValueError) as e:  # the schema lets through what it does not constrain
        raise ConfigError(f"{role} {summary}: not a gatekeeper summary ({type(e).__name__}: {e})") from None


def _read(summary: Path, role: str) -> dict[str, Any]:
    """summary.json as checked JSON."""
    try:
        doc = json.loads(summary.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{role} {summary}: cannot be read ({e})") from None
    except ValueError as e:
        raise ConfigError(f"{role} {summary}: not JSON ({e})") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"{role} {summary}: not a gatekeeper summary (a JSON object is expected)")
    if doc.get("format") != SUMMARY_FORMAT:
        raise ConfigError(f"{role} {summary}: format {doc.get('format')!r}, not {SUMMARY_FORMAT!r}",
                          hint="compare runs with the gatekeeper release that wrote them")
    import jsonschema

    from gatekeeper import schemas

    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(schemas.load("summary.schema.json")).iter_errors(doc))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "top level"
        raise ConfigError(f"{role} {summary}: not a gatekeeper summary (at {where}: {error.message[:200]})")
    return doc


def _summary(path: Path, doc: dict[str, Any]) -> RunSummary:
    gates = doc["gates"]
    checks = tuple(_check(c, g["id"]) for g in gates for c in g["checks"])
    return RunSummary(path, doc["run_id"], Verdict(doc["verdict"]), _headline(doc), tuple(doc["reasons"]), doc["policy"],
                      tuple(doc["golden_sets"]), doc["seed"], doc.get("gatekeeper_version"), _left_out(doc), _target(doc, "candidate"),
                      checks, _target(doc, "reference"))


def _headline(doc: dict[str, Any]) -> str:
    """The run's headline: summary.json's own, or for a file written before it had one, rebuilt as
    `RunResult.headline` writes it from the fields it keeps."""
    if isinstance(doc.get("headline"), str):
        return str(doc["headline"])
    not_run, total = len(doc.get("gates_not_run", ())), len(doc["gates"])
    said = ([f"{total - not_run} of {total} gates ran"] if not_run else []) + [str(r) for r in doc.get("restricted", ())]
    return doc["verdict"] + (f" (partial: {'; '.join(said)})" if said else "")


def _left_out(doc: dict[str, Any]) -> tuple[str, ...]:
    gates = tuple(f"gate {g['id']} ({g['why']})" for g in doc.get("gates_not_run", ()))
    return gates + tuple(str(r) for r in doc.get("restricted", ()))


def _target(doc: dict[str, Any], role: str) -> str:
    """A target as a comparison names it: its engine (summary.json's identity, where the run wrote
    one) or its description, and its /version answer."""
    target = next((t for t in doc["targets"] if t["role"] == role), None)
    if target is None:
        return "–"
    engine = doc.get("identity", {}).get(role, {}).get("engine")
    return (f"{engine}: " if engine else "") + target["description"] + (f" (version {target['version']})" if target.get("version") else "")


def _check(c: dict[str, Any], gate: str) -> CheckResult:
    return CheckResult(c["id"], gate, Status(c["status"]), c["blocking"], c["reason"], _numbers(c["metrics"]),
                       family=c.get("family"), duration_s=c["duration_s"], judgement=Judgement(c["judgement"]),
                       undecided=bool(c.get("undecided", False)), finished_at=c.get("finished_at", ""),
                       near_miss=bool(c.get("near_miss", False)))


def _numbers(value: Any) -> Any:
    """summary.json's strict-JSON spelling of non-finite floats, undone (at any depth)."""
    if isinstance(value, str):
        return _NON_FINITE.get(value, value)
    if isinstance(value, dict):
        return {k: _numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_numbers(v) for v in value]
    return value
