"""A run directory's own state: whether it is complete, which plan made it, what a resumed run reuses.

- `incomplete.json` is written (atomically) when a run starts and removed after its last report:
  while it is there the directory holds an unfinished run — running, killed or crashed.
  `summary.json` appears only at the end.
- `plan.json` holds the plan's fingerprint: one hash per part (the resolved options, the policy,
  the golden sets, the files the policy names, the bundled model, gatekeeper's own code), so
  `gatekeeper run --resume DIR` continues only the same plan and names the part that differs.
- `records.jsonl` (report/records.py) holds a `gatekeeper.gate/1` line when a gate ends. A gate
  with that line is finished: a resumed run takes its checks, coverage, notes and request timings
  from the file instead of running it again. A gate without one is run again, its partial check
  lines dropped. Gate 1 (startup) always runs again: the targets are launched anew, and what gate
  1 establishes about them (versions, execution path, capabilities) must hold for this launch.

Reused gates are marked (`GateResult.reused`), and summary.json lists which gates were reused and
which ran. `--resume DIR --redo GATE[,GATE]` continues a finished run too: the named gates are
asked again on fresh targets (with gate 1), every other gate's records are kept, and one report is
written whose summary.json names the gates redone.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gatekeeper import __version__
from gatekeeper.config.run_config import find_file
from gatekeeper.config.run_options import OptionSources, RunOptions
from gatekeeper.errors import ConfigError
from gatekeeper.evidence import from_json
from gatekeeper.atomic import write_atomic
from gatekeeper.report.records import GATE_FORMAT, RECORD_FORMAT, read_records
from gatekeeper.report.serialise import limit_of
from gatekeeper.results import CheckResult, Coverage, GateResult, Judgement, RequestTiming, RetryCount, Status
from gatekeeper.run_plan import RunPlan
from gatekeeper.run_summary import SUMMARY_FILE
from gatekeeper.tape.digest import digest, files_digest

INCOMPLETE = "incomplete.json"
PLAN = "plan.json"
PLAN_FORMAT = "gatekeeper.run.plan/1"
ALWAYS_RERUN = frozenset({"startup"})
_NOT_PLAN = frozenset({"out", "resume", "reference_cache", "report_url"})  # options that say where, not what


def mark_incomplete(run_dir: Path, run_id: str, started_at: str) -> None:
    """Say that `run_dir` holds a run that has not finished (removed by `mark_complete`)."""
    write_atomic(run_dir / INCOMPLETE, json.dumps({"run_id": run_id, "started_at": started_at, "pid": os.getpid(),
                                                   "resume": f"gatekeeper run <the same options> --resume {run_dir}"},
                                                  indent=2) + "\n")


def mark_complete(run_dir: Path) -> None:
    """The run's last report is written."""
    (run_dir / INCOMPLETE).unlink(missing_ok=True)


def _named_files(plan: RunPlan) -> list[Path]:
    """Files the policy's settings name (a traffic sample, a baseline): their content is the plan too."""
    found = []
    for settings in plan.policy.gates.values():
        if not dataclasses.is_dataclass(settings):
            continue
        for f in dataclasses.fields(settings):
            value = getattr(settings, f.name)
            if isinstance(value, str) and value and len(value) < 4096 and "\n" not in value:
                path = find_file(value)
                if path.is_file():
                    found.append(path)
    return found


def fingerprint(plan: RunPlan) -> dict[str, str]:
    """The plan's parts, each hashed: what must be the same for a run to be continued."""
    import gatekeeper

    code = Path(gatekeeper.__file__).parent
    models = [Path(s.model) for s in (plan.reference, plan.candidate) if s.kind == "bundled" and s.model]
    options = plan.options.as_json() if plan.options is not None else {}
    return {
        "options": digest([json.dumps({k: v for k, v in options.items() if k not in _NOT_PLAN}, sort_keys=True,
                                       default=str).encode()]),
        "policy": files_digest([find_file(plan.policy.path)]),
        "golden_sets": files_digest(find_file(p) for p in plan.golden_paths),
        "policy_files": files_digest(_named_files(plan)),
        "model": files_digest(m for m in models if m.exists()),
        "code": digest([__version__.encode(), files_digest(p for p in sorted(code.iterdir())
                                                      if p.name not in ("models", "__pycache__")).encode()]),
    }


def write_plan(run_dir: Path, run_id: str, parts: Mapping[str, str], options: RunOptions | None = None,
               sources: Mapping[str, str] | None = None, redact: Callable[[str], str] = lambda text: text) -> None:
    """Record the plan's fingerprint in the run directory and, when given, the resolved options
    and where each came from (what `gatekeeper rejudge` rebuilds the plan from), through `redact`
    (a URL's password, a launch command's key)."""
    data: dict[str, object] = {"format": PLAN_FORMAT, "run_id": run_id, "fingerprint": dict(parts)}
    if options is not None:
        data["options"], data["sources"] = options.as_json(), dict(sources or {})
    write_atomic(run_dir / PLAN, redact(json.dumps(data, indent=2, default=str)) + "\n")


def read_plan_options(run_dir: Path) -> tuple[RunOptions, OptionSources]:
    """The options a finished run recorded in plan.json and where each came from (ConfigError
    naming what is missing)."""
    try:
        data = json.loads((run_dir / PLAN).read_text(encoding="utf-8"))
    except OSError:
        raise ConfigError(f"{run_dir / PLAN}: missing; not a run directory gatekeeper run wrote") from None
    except ValueError as e:
        raise ConfigError(f"{run_dir / PLAN}: not JSON ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("options"), dict) or not isinstance(data.get("sources"), dict):
        raise ConfigError(f"{run_dir / PLAN}: records no options (a run made before gatekeeper recorded them, or not by "
                          "`gatekeeper run`): it cannot be re-judged")
    return RunOptions.from_values(data["options"]), OptionSources(data["sources"])


@dataclass(frozen=True)
class Resumable:
    """What an interrupted run left that a resumed run reuses: finished gates by id, with the
    request timings each made."""

    run_dir: Path
    gates: Mapping[str, GateResult]
    timings: Mapping[str, tuple[RequestTiming, ...]]
    records: tuple[dict[str, Any], ...]  # the lines of the reused gates, as read
    redone: tuple[str, ...] = ()  # gates of a finished run asked again (--redo), not reused


def without(resumable: Resumable, redo: tuple[str, ...]) -> Resumable:
    """`resumable` with the `redo` gates set aside: they run again on fresh targets."""
    keep = {g: r for g, r in resumable.gates.items() if g not in redo}
    records = tuple(r for r in resumable.records if r.get("id" if r.get("format") == GATE_FORMAT else "gate") in keep)
    return Resumable(resumable.run_dir, keep, {g: t for g, t in resumable.timings.items() if g in keep}, records, redo)


def check_resumable(run_dir: Path, parts: Mapping[str, str], redo: tuple[str, ...] = ()) -> Resumable:
    """The finished gates of the interrupted run in `run_dir`, after checking it is one and that
    it was made by the same plan (ConfigError, exit 3, naming what differs). With `redo` (gate
    ids), a finished run may be continued too: those gates are asked again, the rest reused."""
    if not run_dir.is_dir():
        raise ConfigError(f"--resume {run_dir}: no such run directory")
    if not (run_dir / INCOMPLETE).exists():
        done = (run_dir / SUMMARY_FILE).exists()
        if not (done and redo):
            raise ConfigError(f"--resume {run_dir}: " + ("the run is complete (summary.json); nothing to resume" if done
                                                         else f"not an interrupted run ({INCOMPLETE} is missing)"),
                              hint="to ask some of its gates again: --resume RUN_DIR --redo GATE[,GATE]" if done else None)
    try:
        recorded = json.loads((run_dir / PLAN).read_text(encoding="utf-8"))
        before = recorded["fingerprint"]
        assert recorded.get("format") == PLAN_FORMAT and isinstance(before, dict)
    except (OSError, ValueError, KeyError, TypeError, AssertionError):
        raise ConfigError(f"--resume {run_dir}: {PLAN} is missing or unreadable; the run cannot be continued") from None
    changed = [part for part in parts if before.get(part) != parts[part]]
    if changed:
        raise ConfigError(f"--resume {run_dir}: the plan differs from the interrupted run's in: {', '.join(changed)}",
                          hint="give the same options, files and gatekeeper version as the run had")
    return without(finished_gates(run_dir), redo) if redo else finished_gates(run_dir)


def finished_gates(run_dir: Path) -> Resumable:
    """The gates a run directory's records.jsonl says finished (gate 1 aside), rebuilt."""
    path = run_dir / "records.jsonl"
    try:
        lines = list(read_records(path)) if path.exists() else []
    except (OSError, ValueError) as e:
        raise ConfigError(f"--resume {run_dir}: records.jsonl is unreadable: {e}") from None
    ends = {r["id"]: r for r in lines if r.get("format") == GATE_FORMAT and r.get("id") not in ALWAYS_RERUN}
    try:
        gates, timings = _rebuild(lines, ends)
    except (KeyError, TypeError, ValueError) as e:
        raise ConfigError(f"--resume {run_dir}: records.jsonl has a malformed line ({type(e).__name__}: {e})") from None
    kept = tuple(r for r in lines if r.get("id" if r.get("format") == GATE_FORMAT else "gate") in gates)
    return Resumable(run_dir, gates, timings, kept)


def _rebuild(lines: list[dict[str, Any]], ends: Mapping[str, dict[str, Any]]
             ) -> tuple[dict[str, GateResult], dict[str, tuple[RequestTiming, ...]]]:
    """Each finished gate from its end line and its check lines."""
    gates, timings = {}, {}
    for gate_id, end in ends.items():
        checks = tuple(_check(r) for r in lines if r.get("format") == RECORD_FORMAT and r.get("gate") == gate_id)
        cov = end.get("coverage")
        coverage = None if cov is None else Coverage(cov["judged"], tuple(cov["unjudged"].items()), cov["min_share"],
                                                     tuple(cov.get("not_asked", {}).items()),
                                                     tuple(cov.get("lost_to", {}).items()))
        gates[gate_id] = GateResult(id=gate_id, stage=end["stage"], title=end["title"], description=end["description"],
                                    status=Status(end["status"]), checks=checks, duration_s=end["duration_s"],
                                    stopped_run=end["stopped_run"], notes=tuple(end["notes"]), coverage=coverage, reused=True,
                                    excluded=end.get("excluded"), started_at=end.get("started_at", ""),
                                    retries=tuple(RetryCount(**c) for c in end.get("retries", ())))
        timings[gate_id] = tuple(RequestTiming(t, gate_id, e2e, ttft, n) for t, e2e, ttft, n in end["timings"])
    return gates, timings


def keep_reused_records(resumable: Resumable) -> None:
    """records.jsonl with only the reused gates' lines (a gate that is run again starts afresh; a
    torn last line goes), replaced atomically before the resumed run appends to it."""
    from gatekeeper.report.jsonable import dumps

    write_atomic(resumable.run_dir / "records.jsonl", "".join(dumps(r) + "\n" for r in resumable.records))


def set_aside_logs(run_dir: Path) -> None:
    """The interrupted run's target logs become `<name>.interrupted.log`, and its recorded answers
    `answers.interrupted/`: the resumed run's targets write their own (a resumed run is two
    launches, so `gatekeeper rejudge` refuses it)."""
    for log in run_dir.glob("*.log"):
        if not log.name.endswith(".interrupted.log"):
            log.replace(log.with_name(log.name[:-len(".log")] + ".interrupted.log"))
    answers, aside = run_dir / "answers", run_dir / "answers.interrupted"
    if answers.is_dir() and not aside.exists():
        answers.replace(aside)


def _number(value: Any) -> Any:
    """Undo jsonable's strict-JSON spelling of non-finite floats."""
    if isinstance(value, str) and value in ("NaN", "Infinity", "-Infinity"):
        return float(value.replace("Infinity", "inf"))
    if isinstance(value, dict):
        return {k: _number(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_number(v) for v in value]
    return value


def _check(r: dict[str, Any]) -> CheckResult:
    evidence = tuple(from_json(e["kind"], e["title"], e["data"], bool(e.get("key", False))) for e in r.get("evidence", ()))
    return CheckResult(id=r["id"], gate=r["gate"], status=Status(r["status"]), blocking=r["blocking"], reason=r["reason"],
                       metrics=_number(r["metrics"]), evidence=evidence, family=r.get("family"),
                       duration_s=r.get("duration_s", 0.0), judgement=Judgement(r["judgement"]),
                       undecided=bool(r.get("undecided", False)), finished_at=r.get("finished_at", ""),
                       detection_limit=limit_of(r.get("detection_limit")), near_miss=bool(r.get("near_miss", False)))
