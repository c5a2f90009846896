"""A finished run directory read for `gatekeeper compare`, through the one summary reader.

A run directory is what `gatekeeper run` leaves in `reports/<run-id>/`. Its summary.json holds
everything a comparison needs — every check's status, reason and metrics — and is read by
`gatekeeper.run_summary` (schema-checked, typed); the evidence in records.jsonl is not compared.
Every way the input can be wrong is a `ConfigError` (exit 3) naming A or B and the directory or
the file:

- the path does not exist or is not a directory;
- the directory still holds `incomplete.json` (run_dir.py): the run is running, was killed or
  crashed, so its reports are missing or stale — it is refused, with the command that resumes it;
- there is no summary.json (not a run directory);
- summary.json cannot be read, is not JSON, is another format (a later `gatekeeper.summary/N`),
  or does not match the schema (the first violation is named, with where).
"""

from __future__ import annotations

from pathlib import Path

from gatekeeper.errors import ConfigError
from gatekeeper.run.run_dir import INCOMPLETE
from gatekeeper.run_summary import SUMMARY_FILE, RunSummary, SummaryError, SummaryOtherFormat, read_summary

_HINT = "give a run directory that `gatekeeper run` finished, e.g. reports/<run-id>"


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
    if not (path / SUMMARY_FILE).is_file():
        raise ConfigError(f"{role} {path}: not a run directory (no {SUMMARY_FILE})", hint=_HINT)
    try:
        return read_summary(path)
    except SummaryOtherFormat as e:
        raise ConfigError(f"{role} {e}", hint="compare runs with the gatekeeper release that wrote them") from None
    except SummaryError as e:
        raise ConfigError(f"{role} {e}", hint=e.hint) from None
