"""Gate 1 — startup: does the candidate come up, answer, and start cleanly?

Checks, per target: it became ready (time to ready; a process that exits first is shown with
its log tail), `/health` answers 200, `/v1/models` lists the model, `/version` (advisory), and
the first-request canary `Reply with exactly: OK` answers `OK`. For launched targets the
candidate's log is scanned with the policy's rules (regex → severity: tracebacks, fallbacks,
"not supported", NaN...) — a rule only fires on lines the reference did not also print — and
warning lines the candidate prints that the reference does not are listed.

A failure looks like: a candidate that dies at startup (a missing optional dependency), never
becomes healthy, answers the canary with `!!!!`, or quietly logs a new fallback warning.
"""

from __future__ import annotations

import re
import time

from gatekeeper.errors import EndpointError
from gatekeeper.gates.interface import Gate, GateContext
from gatekeeper.results import Evidence, Status

_VOLATILE = [
    (re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?"), "<time>"),
    (re.compile(r"\b\d+(?:\.\d+)?\s*(?:ms|s|MiB|GiB|MB|GB)\b"), "<num>"),
    (re.compile(r"0x[0-9a-fA-F]+"), "<addr>"),
    (re.compile(r"(?:127\.0\.0\.1|localhost):\d+"), "<host>"),
    (re.compile(r"\bpid[ =:]*\d+", re.I), "pid <n>"),
]
_WARNING = re.compile(r"\b(WARN(?:ING)?|ERROR|CRITICAL|Traceback)\b")


def normalise(line: str) -> str:
    """A log line without timestamps, ports, addresses and sizes, for comparing two logs."""
    for pattern, repl in _VOLATILE:
        line = pattern.sub(repl, line)
    return line.strip()


class StartupGate(Gate):
    """See the module docstring."""

    id = "startup"
    stage = 1
    title = "Startup"
    defaults = {
        "canary_prompt": "Reply with exactly: OK",
        "canary_expect": "OK",
        "canary_max_tokens": 8,
        "log_rules": [
            {"pattern": "Traceback \\(most recent call last\\)", "severity": "FAIL"},
            {"pattern": "(?i)\\b(nan|inf) (detected|values?)\\b", "severity": "FAIL"},
            {"pattern": "(?i)fall(ing)? ?back", "severity": "WARN"},
            {"pattern": "(?i)not supported", "severity": "WARN"},
        ],
        "new_warnings_severity": "WARN",
    }

    def run(self, ctx: GateContext) -> None:
        """Readiness, endpoints and canary per target, then the log rules for the candidate."""
        for role, ep in ctx.endpoints.items():
            rt = ctx.runtimes[role]
            if not rt.ready:
                # A launched candidate that dies is a regression; an unreachable URL is an error.
                status = Status.FAIL if role == "candidate" and rt.kind != "url" else Status.ERROR
                ctx.check(f"ready.{role}", status, f"{role} did not become ready: {rt.start_error}",
                          {"startup_s": rt.startup_s}, [Evidence("log", f"{role} log tail", {"lines": rt.log_lines[-40:]})])
                continue
            ctx.check(f"ready.{role}", Status.PASS, f"ready in {rt.startup_s:.1f} s" if rt.startup_s else "reachable",
                      {"startup_s": rt.startup_s})
            self._endpoints(ctx, role, ep)
            self._probe(ctx, role)
        self._canary(ctx)
        self._logs(ctx)

    def _endpoints(self, ctx: GateContext, role: str, ep) -> None:
        try:
            r = ep.get("/health")
            ok = r.status_code == 200
            ctx.check(f"health.{role}", Status.PASS if ok else Status.FAIL, f"/health answered {r.status_code}",
                      {"status_code": r.status_code})
            r = ep.get("/v1/models")
            ids = [m.get("id") for m in (r.json().get("data") or [])] if r.status_code == 200 else []
            listed = ep.model in ids
            ctx.check(f"models.{role}", Status.PASS if listed else Status.FAIL,
                      f"/v1/models lists {ids}" + ("" if listed else f", not {ep.model!r}"), {"status_code": r.status_code})
            r = ep.get("/version")
            version = r.json().get("version") if r.status_code == 200 else None
            ctx.check(f"version.{role}", Status.PASS if version else Status.WARN,
                      f"version {version}" if version else f"/version answered {r.status_code}", {"version": version})
        except EndpointError as e:
            ctx.error_check(f"health.{role}", e)
            return
        except ValueError:
            ctx.check(f"models.{role}", Status.FAIL, "/v1/models or /version did not return JSON")
    def _probe(self, ctx: GateContext, role: str) -> None:
        """Report what the capability probe met: broken exchanges are ERROR, tolerated
        protocol deviations WARN, missing features only listed (their checks SKIP later)."""
        caps = ctx.capabilities.get(role, {})
        names = ("chat", "completions", "logprobs", "echo", "prompt_logprobs", "tools", "streaming", "tokenize")
        metrics = {n: bool(caps.get(n)) for n in names}
        rows = [[n, "yes" if caps.get(n) else "no", caps.get("notes", {}).get(n, "")] for n in names]
        evidence = [Evidence("table", f"{role} capabilities", {"columns": ["capability", "supported", "note"], "rows": rows})]
        errors, warnings = caps.get("errors", {}), caps.get("protocol_warnings", [])
        if errors:
            ctx.check(f"protocol.{role}", Status.ERROR, "probe requests failed: " + "; ".join(
                f"{k}: {v}" for k, v in errors.items()), metrics, evidence)
        elif warnings:
            ctx.check(f"protocol.{role}", Status.WARN, "protocol deviations: " + "; ".join(warnings), metrics, evidence)
        else:
            missing = [n for n in names if not caps.get(n)]
            ctx.check(f"protocol.{role}", Status.PASS, "all probed features supported" if not missing else
                      "not supported: " + ", ".join(missing), metrics, evidence)

    def _canary(self, ctx: GateContext) -> None:
        """The first request on both targets; the candidate is judged against the reference."""
        s = ctx.settings
        answers: dict[str, str | None] = {}
        for role, ep in ctx.endpoints.items():
            if not ctx.runtimes[role].ready:
                continue
            t0 = time.perf_counter()
            try:
                resp = ep.chat([{"role": "user", "content": s["canary_prompt"]}], max_tokens=s["canary_max_tokens"])
            except EndpointError as e:
                ctx.error_check(f"canary.{role}", e)
                continue
            answers[role] = got = resp.text.strip()
            ok = got == s["canary_expect"]
            if role == "reference":
                ctx.check("canary.reference", Status.PASS if ok else Status.WARN,
                          f"answered {got!r}" + ("" if ok else f", expected {s['canary_expect']!r}: the canary does not "
                                                 "suit this model, so the candidate is judged on agreement only"),
                          {"first_request_s": time.perf_counter() - t0})
                continue
            ref = answers.get("reference")
            ref_ok = ref == s["canary_expect"]
            if ok:
                status, reason = Status.PASS, f"answered {got!r}"
            elif ref is not None and not ref_ok:
                status = Status.WARN if got == ref else Status.FAIL
                reason = (f"answered {got!r}; the reference also misses {s['canary_expect']!r} "
                          + ("and answers the same" if got == ref else f"but answers {ref!r}"))
            else:
                status, reason = Status.FAIL, f"answered {got!r}, expected {s['canary_expect']!r}"
            evidence = [] if status == Status.PASS else [Evidence("text_pair", "canary answer", {
                "reference": ref if ref is not None else s["canary_expect"], "candidate": got, "divergence": None,
                "prompt": s["canary_prompt"]})]
            ctx.check("canary.candidate", status, reason, {"first_request_s": time.perf_counter() - t0}, evidence)

    def _logs(self, ctx: GateContext) -> None:
        cand, ref = ctx.runtimes["candidate"], ctx.runtimes["reference"]
        if cand.kind == "url":
            ctx.skip("log_rules", "the candidate is a URL target: gatekeeper has no startup log for it")
            ctx.skip("new_warnings", "the candidate is a URL target: gatekeeper has no startup log for it")
            return
        ref_lines = {normalise(line) for line in ref.log_lines}
        hits: list[list[str]] = []
        worst = Status.PASS
        for rule in ctx.settings["log_rules"]:
            pattern, severity = re.compile(rule["pattern"]), Status(rule.get("severity", "WARN"))
            for line in cand.log_lines:
                if pattern.search(line) and normalise(line) not in ref_lines:
                    hits.append([rule["pattern"], severity.value, line[:300]])
                    if severity == Status.FAIL or (severity == Status.WARN and worst == Status.PASS):
                        worst = severity
        ctx.check("log_rules", worst, f"{len(hits)} candidate log line(s) matched a rule" if hits else "no rule matched",
                  {"matches": len(hits)}, [Evidence("table", "matched log lines", {"columns": ["rule", "severity", "line"],
                                                                                  "rows": hits[:50]})] if hits else [])
        new = sorted({normalise(line) for line in cand.log_lines if _WARNING.search(line)} - ref_lines)
        severity = Status(ctx.settings["new_warnings_severity"]) if new else Status.PASS
        ctx.check("new_warnings", severity, f"{len(new)} warning line(s) the reference did not print" if new
                  else "no new warnings", {"new_warnings": len(new)},
                  [Evidence("log", "new warning lines (normalised)", {"lines": new[:50]})] if new else [])
