"""summary.json files for the tests of its readers, written by the project's own renderer
(`SummaryJsonRenderer`, as `gatekeeper run` writes them) from a few hand-built checks."""

from __future__ import annotations

from pathlib import Path

from gatekeeper.report.run.data import build_report_data
from gatekeeper.report.run.registry import listed_filenames
from gatekeeper.report.run.summary_json import SummaryJsonRenderer
from gatekeeper.results import CheckResult, GateResult, RunResult, Status, TargetInfo, Verdict, worst_status


def check(check_id: str, status: str, reason: str = "ok", blocking: bool = True, family: str | None = None,
          **metrics: object) -> CheckResult:
    """A check of the gate its id names."""
    return CheckResult(id=check_id, gate=check_id.split(".", 1)[0], status=Status(status), blocking=blocking, reason=reason,
                       metrics=dict(metrics), family=family)


def target(role: str, model: str = "gk-tiny", version: str | None = "0.1.0", declared: dict[str, str] | None = None,
           observed: dict[str, str] | None = None) -> TargetInfo:
    """A bundled target in `role`."""
    return TargetInfo(role=role, kind="bundled", description=f"bundled {role}", base_url="http://127.0.0.1:1", model=model, version=version,
                      declared=tuple((declared or {}).items()), observed=tuple((observed or {}).items()))


def run_of(verdict: str, checks: list[CheckResult], targets: tuple[TargetInfo, ...] = (), run_id: str = "run-1",
           seed: int = 0, policy: str = "gates/default.yaml") -> RunResult:
    """A finished run of these checks, one gate per gate id in the order they first appear."""
    gates = []
    for n, gate_id in enumerate(dict.fromkeys(c.gate for c in checks), 1):
        mine = tuple(c for c in checks if c.gate == gate_id)
        gates.append(GateResult(id=gate_id, stage=n, title=gate_id.title(), description=f"The {gate_id} gate.", status=worst_status(mine),
                                checks=mine))
    return RunResult(run_id, "2026-12-01T10:00:00+00:00", "2026-12-01T10:01:30+00:00", Verdict(verdict),
                     (f"{verdict}: as built",), targets or (target("reference"), target("candidate")), tuple(gates),
                     policy=policy, seed=seed)


def write_summary(run_dir: Path, run: RunResult) -> Path:
    """`run`'s summary.json in `run_dir` (made if need be); returns the file."""
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / "summary.json"
    path.write_text(SummaryJsonRenderer().render(build_report_data(run, listed_filenames())), encoding="utf-8")
    return path
