"""`startup.execution_path`: the path each target is judged by, beside the path it reports.

Tolerances follow the declared dtype (or a bundled target's engine options; float32 when nothing
is said). The engine's own log and `/metrics` may say otherwise (`targets/observed.py` reads
them): a candidate judged as float32 whose log prints `dtype=torch.bfloat16` would meet
tolerances that do not fit it. A disagreement is an advisory FAIL (the run HOLDs: fix the
declaration); nothing observed on either target is an advisory SKIP saying where to look.
"""

from __future__ import annotations

from gatekeeper.errors import EndpointError
from gatekeeper.evidence import Table
from gatekeeper.gates.interface import GateContext
from gatekeeper.results import Status
from gatekeeper.targets.observed import disagreements, from_log, from_metrics, resolve
from gatekeeper.gates.startup.checks import EXECUTION_PATH, ExecutionPathFinding
from gatekeeper.detection import exact


def _pairs(path: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(path.items())) or "—"


def check_path(ctx: GateContext) -> dict[str, dict[str, str]]:
    """Read each ready target's observed path and judge it against the path it is judged by;
    the observed paths, by role."""
    rows, wrong, observed_by_role = [], [], {}
    for role, ep in ctx.endpoints.items():
        rt = ctx.run.runtimes[role]
        if not rt.ready:
            continue
        logged = from_log(rt.log_lines)
        try:
            r = ep.get("/metrics")
            exposed = from_metrics(r.text) if r.status_code == 200 else {}
        except EndpointError:
            exposed = {}
        observed = resolve({**exposed, **logged})  # the log names the model dtype; /metrics only the cache
        observed_by_role[role] = observed
        sources = [name for name, found in (("log", logged), ("/metrics", exposed)) if found]
        rows.append([role, _pairs(rt.assumed), _pairs(observed), ", ".join(sources) or "nothing stated"])
        wrong += [(role, *d) for d in disagreements(rt.assumed, observed)]
    evidence = [Table("execution path: judged by vs stated by the engine", ["target", "judged by", "stated", "source"], rows)]
    metrics = ExecutionPathFinding(observed={role: dict(path) for role, path in observed_by_role.items()},
                                   disagreements=len(wrong))
    if not any(observed_by_role.values()):
        ctx.check(EXECUTION_PATH, Status.SKIP, "no target states its execution path (no log with dtype=/tp= lines, no "
                  "vllm:cache_config_info in /metrics): the declared path is taken on trust", metrics, evidence,
                  advisory=True)
    elif wrong:
        said = "; ".join(f"the {role} is judged as {key}={assumed} but says {key}={seen}" for role, key, assumed, seen in wrong)
        ctx.check(EXECUTION_PATH, Status.FAIL, f"{said}: declare what it runs (declare: {{{wrong[0][1]}: "
                  f"{wrong[0][3]}}}) so the tolerances fit", metrics, evidence, advisory=True)
    else:
        ctx.check(EXECUTION_PATH, Status.PASS, "what the targets state agrees with the path they are judged by",
                  metrics, evidence, limit=exact("stated path key other than the one judged by",
                                                 sum(len(path) for path in observed_by_role.values())))
    return observed_by_role
