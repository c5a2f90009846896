"""`startup.path_change`: did the candidate take another execution path than the reference?

An unexplained kernel fallback or dtype path change is a rollback condition
(docs/bug-classes.md#rollback-conditions). Two kinds of change are read, both from what the engines
themselves state (`targets/observed.py`):

- a path key both targets state with different values (dtype, kv_cache_dtype, quantization,
  tp, attention backend, fused_norm, enforce_eager). A difference the candidate's own declared
  path names (a bf16 candidate judged against an fp32 reference) is the comparison asked for,
  not a change;
- a candidate log line matching `path_change_lines` (kernel fallbacks) that the reference does
  not print.

Either is a blocking FAIL unless the policy lists it in `explained_path_changes`; explained
changes are listed in a PASS. With no path key stated by both and no candidate log, nothing was
judged: an advisory SKIP.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from gatekeeper.evidence import Table
from gatekeeper.gates.interface import GateContext
from gatekeeper.gates.startup.logs import normalise
from gatekeeper.gates.startup.settings import StartupSettings
from gatekeeper.results import Status
from gatekeeper.targets.observed import PATH_KEYS, canonical, resolve
from gatekeeper.gates.startup.checks import PATH_CHANGE, PathChangeFinding
from gatekeeper.detection import DetectionLimit, exact


def _key_changes(ctx: GateContext, observed: Mapping[str, Mapping[str, str]]) -> tuple[list[tuple[str, str, str]], int]:
    """(key, reference value, candidate value) for each path key both state differently and the
    candidate's declaration does not name; and how many keys both state."""
    ref, cand = (_auto_resolved(ctx, role, observed.get(role) or {}) for role in ("reference", "candidate"))
    said = ctx.run.runtimes["candidate"].assumed
    # kv_cache_dtype left at auto follows the declared dtype (the engines' rule)
    assumed = resolve({k: canonical(k, v) for k, v in {"kv_cache_dtype": "auto", **said}.items()})
    both = [k for k in PATH_KEYS if k in ref and k in cand]
    changes = []
    for key in both:
        if ref[key] != cand[key] and assumed.get(key) != cand[key]:
            changes.append((key, ref[key], cand[key]))
    return changes, len(both)


def _auto_resolved(ctx: GateContext, role: str, stated: Mapping[str, str]) -> dict[str, str]:
    """A target's stated path with `kv_cache_dtype=auto` read as the model dtype it runs: the
    dtype its log states, else the one it is judged by (a URL target has no log; vLLM's
    `/metrics` states `cache_dtype="auto"` only). An `auto` whose dtype is unknown is dropped:
    equal values in two spellings are not a change, and an unknown one is not judged."""
    observed = dict(stated)
    if observed.get("kv_cache_dtype") == "auto":
        assumed = ctx.run.runtimes[role].assumed.get("dtype")
        dtype = observed.get("dtype") or (canonical("dtype", str(assumed)) if assumed else None)
        if dtype:
            observed["kv_cache_dtype"] = dtype
        else:
            del observed["kv_cache_dtype"]
    return observed


def _fallback_lines(ctx: GateContext, patterns: list[str]) -> list[str]:
    """Candidate log lines that match a fallback pattern and that the reference does not print."""
    cand, ref = ctx.run.runtimes["candidate"], ctx.run.runtimes["reference"]
    ref_lines = {normalise(line) for line in ref.log_lines}
    compiled = [re.compile(p) for p in patterns]
    seen: dict[str, str] = {}
    for line in cand.log_lines:
        key = normalise(line)
        if key not in ref_lines and key not in seen and any(p.search(line) for p in compiled):
            seen[key] = line.strip()[:300]
    return list(seen.values())


def _explained(s: StartupSettings, key: str | None = None, line: str | None = None) -> str | None:
    """The policy's reason when it lists this change as explained, else None."""
    for item in s.explained_path_changes:
        if (key is not None and item.get("key") == key) or (line is not None and "line" in item
                                                              and re.search(item["line"], line)):
            return str(item.get("reason") or "listed in explained_path_changes")
    return None


def check_path_change(ctx: GateContext, s: StartupSettings, observed: Mapping[str, Mapping[str, str]]) -> None:
    """Judge the candidate's observed path against the reference's (`observed`: what `check_path` read)."""
    keys, stated = _key_changes(ctx, observed)
    cand = ctx.run.runtimes["candidate"]
    has_log = cand.has_log and bool(cand.log_lines)
    lines = _fallback_lines(ctx, s.path_change_lines) if has_log else []
    rows, unexplained = [], []
    for key, ref_value, cand_value in keys:
        why = _explained(s, key=key)
        rows.append([f"{key}: {ref_value} → {cand_value}", why or "unexplained"])
        if why is None:
            unexplained.append(f"{key} {ref_value} → {cand_value}")
    for line in lines:
        why = _explained(s, line=line)
        rows.append([f"fallback: {line}", why or "unexplained"])
        if why is None:
            unexplained.append(f"a fallback line the reference does not print ({line[:120]})")
    metrics = PathChangeFinding(keys_compared=stated, key_changes=len(keys), fallback_lines=len(lines),
                                unexplained=len(unexplained))
    evidence = [Table("execution-path changes (candidate vs reference)", ["change", "explained by"], rows)] if rows else []
    if unexplained:
        ctx.check(PATH_CHANGE, Status.FAIL, f"unexplained execution-path change: {'; '.join(unexplained[:3])}"
                  f"{f' (+{len(unexplained) - 3} more)' if len(unexplained) > 3 else ''}; if it is expected, list it "
                  "under startup.explained_path_changes with a reason", metrics, evidence)
    elif rows:
        ctx.check(PATH_CHANGE, Status.PASS, f"{len(rows)} execution-path change(s), each explained by the policy",
                  metrics, evidence, limit=_limit(stated, cand.log_lines if has_log else []))
    elif stated == 0 and not has_log:
        ctx.skip(PATH_CHANGE, "not judged: the targets state no path key in common and the candidate has no log "
                 "to read fallback lines from", advisory=True)
    else:
        said = f"{stated} path key(s) both state agree" if stated else "no path key stated by both"
        ctx.check(PATH_CHANGE, Status.PASS, f"{said}; no fallback line the reference does not print"
                  if has_log else f"{said}; the candidate has no log, fallback lines not read", metrics,
                  limit=_limit(stated, cand.log_lines if has_log else []))


def _limit(stated: int, lines: list[str]) -> DetectionLimit:
    """What a PASS compared exactly: the path keys both state, and the candidate's log lines read."""
    what = " or ".join(w for w, n in (("path key change", stated), ("fallback line", len(lines))) if n)
    return exact(f"unexplained {what or 'path change'}", stated + len(lines))
