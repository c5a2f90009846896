"""Gate 1 — startup: ready, health, models, version, the canary, the capability probe, the logs.

The checks, why, and what a failure looks like are `StartupGate`'s docstring (the report shows it).
"""

from __future__ import annotations

import functools
import time
from typing import Any

from gatekeeper.capabilities import FEATURES, Capabilities, lost as lost_features
from gatekeeper.detection import exact
from gatekeeper.endpoints.client import Endpoint
from gatekeeper.errors import EndpointError
from gatekeeper.evidence import Log, Table, TextPair
from gatekeeper.gates.interface import Gate, GateContext, StartupFindings
from gatekeeper.gates.startup.logs import check_logs
from gatekeeper.gates.startup.path import check_path
from gatekeeper.gates.startup.path_change import check_path_change
from gatekeeper.gates.startup.settings import StartupSettings
from gatekeeper.endpoints.responses import ChatResponse
from gatekeeper.results import Status
from gatekeeper.endpoints.retry import with_retries
from gatekeeper.gates.startup import checks
from gatekeeper.gates.startup.checks import (CanaryFinding, CapabilitiesFinding, EndpointFinding, ProtocolFinding, ReadyFinding,
                                             UnreadableAnswer, VersionFinding)
from gatekeeper.gates.finding import Finding, RequestFailed


class StartupGate(Gate):
    """Gate 1 — startup: does the candidate come up, answer, and start cleanly?

    Checks, per target: it became ready (time to ready; a process that exits first is shown with
    its log tail), `/health` answers 200, `/v1/models` lists the model, `/version` (advisory), and
    the first-request canary `Reply with exactly: OK` answers `OK`. For launched targets the
    candidate's log is scanned with the policy's rules (regex → severity: tracebacks, fallbacks,
    "not supported", NaN...) — a rule only fires on lines the reference did not also print — and
    warning lines the candidate prints that the reference does not are listed.

    A failure looks like: a candidate that dies at startup (a missing optional dependency), never
    becomes healthy, answers the canary with `!!!!`, or quietly logs a new fallback warning.

    Roles are not symmetric: a reference that is unreachable, unhealthy or does not serve the
    model makes the run HOLD ("reference unusable", ERROR), never ROLLBACK, and nothing is compared
    with it (capabilities, execution path): a key the reference refuses is such a failure. A server without
    `/health` (404) is judged ready by `/v1/models`; the missing endpoint is a note (WARN).

    `startup.capabilities` is one finding for every feature the reference has and the candidate
    lost (tool-call parsing, logprobs, streaming finish reasons, /tokenize...); the later checks
    that need it point to it. `startup.execution_path` sets the path each target is judged by
    (declared dtype, tp...) beside what its log and /metrics state. `startup.path_change`
    (docs/bug-classes.md#rollback-conditions) fails on an execution path the candidate takes and the reference does not — another
    attention backend, dtype path or fusion switch than it declares, or a kernel-fallback line —
    unless the policy lists the change as explained; the later gates still run.
    """

    id = checks.GATE
    stage = 1
    title = "Startup"
    Settings = StartupSettings
    stops_run_on = frozenset({Status.FAIL, Status.ERROR})  # a candidate that cannot start or answer stops the run
    # A lost feature or a mis-declared path is a finding, but the later gates still judge what the candidate does.
    never_stops_run = frozenset({checks.CAPABILITIES, checks.EXECUTION_PATH, checks.PATH_CHANGE})
    needs_ready_targets = False  # it is the gate that reports a target that did not start
    reference_cacheable = False  # it judges this launch: its health, canary and path, asked anew
    min_judged_share = 0.8  # a URL candidate has no startup log: its two log checks are not judged

    def run(self, ctx: GateContext) -> StartupFindings:
        """Readiness and endpoints per target, the canary (the first chat request), the capability
        probe, then the log rules for the candidate; what it found, for the later gates."""
        versions: dict[str, str | None] = {}
        observed: dict[str, dict[str, str]] = {}
        lost: list[str] = []
        neither: list[str] = []
        for role, ep in ctx.endpoints.items():
            rt = ctx.run.runtimes[role]
            if not rt.ready:
                # A launched candidate that dies is a regression; an unreachable URL is an error;
                # a reference that does not come up is the reference's failure, not the candidate's,
                # and then the candidate's own failure to start cannot be told from the machine's.
                ref_up = ctx.run.runtimes["reference"].ready
                status = Status.FAIL if role == "candidate" and rt.kind != "url" and ref_up else Status.ERROR
                what = ("reference unusable: " if role == "reference" else
                        "" if ref_up else "not judged (the reference did not start either): ")
                ctx.check(checks.ready(role), status, f"{what}{role} did not become ready: {rt.start_error}",
                          ReadyFinding(startup_s=rt.startup_s), [Log(f"{role} log tail", rt.log_lines[-40:])])
                continue
            ctx.check(checks.ready(role), Status.PASS, f"ready in {rt.startup_s:.1f} s" if rt.startup_s else "reachable",
                      ReadyFinding(startup_s=rt.startup_s), limit=exact("failure to become ready"))
            versions[role] = self._endpoints(ctx, role, ep)
        self._canary(ctx)
        for role in ctx.endpoints:
            if ctx.run.runtimes[role].ready:
                self._probe(ctx, role)
        unusable = [c.id for c in ctx.checks if c.id.endswith(".reference") and c.status is Status.ERROR]
        if unusable:  # nothing the candidate does can be compared with a reference that cannot answer
            ctx.notes.append("startup: capabilities and the execution path were not compared: the reference is "
                             f"unusable ({', '.join(unusable)})")
        elif all(rt.ready for rt in ctx.run.runtimes.values()):
            lost, neither = self._compare(ctx)
            observed = check_path(ctx)
            check_path_change(ctx, ctx.settings, observed)
        check_logs(ctx, ctx.settings)
        return StartupFindings(versions, observed, frozenset(n for n in lost if n in FEATURES), frozenset(neither))

    def _endpoints(self, ctx: GateContext, role: str, ep: Endpoint) -> str | None:
        """/health, /v1/models and /version of one target; the version it reports (None if none)."""
        def bad(name: str, reason: str, found: Finding) -> None:
            """A failed endpoint check: the candidate's is a FAIL, the reference's makes it unusable."""
            if role == "reference":
                ctx.check(f"{name}.reference", Status.ERROR, f"reference unusable: {reason}", found)
            else:
                ctx.check(f"{name}.candidate", Status.FAIL, reason, found)

        try:
            r = ep.get("/health")
            if r.status_code == 200:
                ctx.check(f"health.{role}", Status.PASS, "/health answered 200", EndpointFinding(status_code=200),
                          limit=exact("/health answer other than 200"))
            elif r.status_code in (404, 405, 501):
                ctx.check(f"health.{role}", Status.WARN, f"no /health endpoint (HTTP {r.status_code}): readiness is "
                          "judged by /v1/models", EndpointFinding(status_code=r.status_code, missing=True))
            else:
                bad("health", f"/health answered {r.status_code}", EndpointFinding(status_code=r.status_code))
            models, status = _get_json(ep, "/v1/models")
            entries = models.get("data")
            ids = [m.get("id") for m in entries if isinstance(m, dict)] if isinstance(entries, list) else []
            if ep.model in ids:
                ctx.check(f"models.{role}", Status.PASS, f"/v1/models lists {ids}", EndpointFinding(status_code=status),
                          limit=exact(f"/v1/models list without {ep.model!r}"))
            else:
                bad("models", f"/v1/models lists {ids}, not {ep.model!r}"
                    + (f" (HTTP {status})" if status != 200 else ""), EndpointFinding(status_code=status))
            info, status = _get_json(ep, "/version")
            version = info.get("version") if isinstance(info.get("version"), str) else None
            ctx.check(f"version.{role}", Status.PASS if version else Status.WARN,
                      f"version {version}" if version else f"/version answered {status}", VersionFinding(version=version))
            return version
        except EndpointError as e:
            if e.kind == "malformed":
                bad("models", "/v1/models or /version did not return JSON", UnreadableAnswer(error_kind=e.kind))
            else:
                prefix = "reference unusable: " if role == "reference" else ""
                ctx.check(f"health.{role}", Status.ERROR, prefix + str(e),
                          RequestFailed(error_kind=e.kind, status_code=e.status),
                          failed=(e,))
        return None

    def _probe(self, ctx: GateContext, role: str) -> None:
        """Report what the capability probe met: broken exchanges are ERROR, tolerated
        protocol deviations WARN, missing features only listed (their checks SKIP later)."""
        caps = ctx.capabilities[role]  # the first read probes: after the canary
        found = ProtocolFinding.probed(caps)
        rows = [[n, _yes(caps, n), caps.note(n)] for n in FEATURES]
        evidence = [Table(f"{role} capabilities", ["capability", "supported", "note"], rows)]
        errors, warnings = caps.errors, caps.protocol_warnings
        if caps.retried:
            evidence.append(Table(f"{role}: probe requests retried after a transient failure", ["failure"],
                                  [[r] for r in caps.retried]))
            ctx.notes.append(f"startup: {len(caps.retried)} {role} probe request(s) retried after a transient "
                             f"failure ({caps.retried[0]})")
        if errors:
            ctx.check(f"protocol.{role}", Status.ERROR, "probe requests failed: " + "; ".join(
                f"{k}: {v}" for k, v in errors.items()), found, evidence)
        elif warnings:
            ctx.check(f"protocol.{role}", Status.WARN, "protocol deviations: " + "; ".join(warnings), found, evidence)
        else:
            missing = caps.missing()
            ctx.check(f"protocol.{role}", Status.PASS, "all probed features supported" if not missing else
                      "not supported: " + ", ".join(missing), found, evidence,
                      limit=exact("protocol deviation in the probed exchanges", len(FEATURES)))

    def _compare(self, ctx: GateContext) -> tuple[list[str], list[str]]:
        """`startup.capabilities`: one finding for every feature the reference supports and the
        candidate lacks (tool calling, logprobs, echo, /tokenize, streaming...), named once here;
        the checks that need it SKIP later pointing here. Blocking by default (a lost feature
        ROLLBACKs), but it never stops the later gates; a feature the probe could not establish
        on the candidate (the model wrote no tool call to parse) is listed, not counted. The
        features neither target has (a server without a tool-call parser, prompt logprobs or
        /tokenize) are named here too, once, with the probe's reason: the server's gap, not the
        candidate's; the checks that need one SKIP as advisory pointing here, and the gates judge
        the rest. The lost features, as the check names them, and the features neither has."""
        ref, cand = ctx.capabilities["reference"], ctx.capabilities["candidate"]
        if ref.errors or cand.errors:
            return [], []  # the probe itself failed: protocol.<role> is ERROR already
        neither = [n for n in FEATURES if ctx.neither_has(n)]
        gaps = ("; neither target has " + "; ".join(f"{n} ({_short(cand.note(n) or ref.note(n))})" for n in neither)
                + ": the checks that need them are not asked") if neither else ""
        lost = lost_features(ref, cand)
        if ref.top_logprobs_max > cand.top_logprobs_max and cand.logprobs:
            lost.append(f"top_logprobs up to {ref.top_logprobs_max} (candidate: {cand.top_logprobs_max})")
        gained = [n for n in FEATURES if getattr(cand, n) and not getattr(ref, n)]
        rows = [[n, _yes(ref, n), _yes(cand, n), cand.note(n) if n in lost or n in neither or cand.undetermined(n) else ""]
                for n in FEATURES]
        evidence = [Table("capabilities: reference vs candidate", ["capability", "reference", "candidate", "candidate note"], rows)]
        if lost:
            ctx.check(checks.CAPABILITIES, Status.FAIL, "capability regression: the candidate lacks " + ", ".join(lost)
                      + " that the reference supports; the checks that need them are not judged" + gaps,
                      CapabilitiesFinding(lost=tuple(lost), gained=tuple(gained), neither=tuple(neither)), evidence)
        else:
            ctx.check(checks.CAPABILITIES, Status.PASS, "the candidate supports everything the reference does"
                      + (f" (and {', '.join(gained)})" if gained else "") + gaps,
                      CapabilitiesFinding(lost=(), gained=tuple(gained), neither=tuple(neither)),
                      evidence if neither else (),
                      limit=exact("feature the reference supports and the candidate lacks", len(FEATURES)))
        return lost, neither

    def _canary(self, ctx: GateContext) -> None:
        """The first request on both targets; the candidate is judged against the reference."""
        s: StartupSettings = ctx.settings
        answers: dict[str, str | None] = {}
        for role, ep in ctx.endpoints.items():
            if not ctx.run.runtimes[role].ready:
                continue
            t0 = time.perf_counter()
            retried: list[str] = []
            try:
                resp = with_retries(functools.partial(ep.chat, [{"role": "user", "content": s.canary_prompt}],
                                                      max_tokens=s.canary_max_tokens), retried)
            except EndpointError as e:
                prefix = "reference unusable: " if role == "reference" else ""
                ctx.check(checks.canary(role), Status.ERROR, prefix + str(e),
                          RequestFailed(error_kind=e.kind, status_code=e.status),
                          failed=(e,))
                continue
            if retried:
                ctx.notes.append(f"startup: the {role}'s canary was retried after a transient failure ({retried[0]})")
            answers[role] = got = resp.text.strip()
            ok = got == s.canary_expect
            if role == "reference":
                ctx.check(checks.canary("reference"), Status.PASS if ok else Status.WARN,
                          f"answered {got!r}" + ("" if ok else f", expected {s.canary_expect!r}: the canary does not "
                                                 "suit this model, so the candidate is judged on agreement only"),
                          CanaryFinding(first_request_s=_first_request_s(resp, retried, t0), retried=len(retried)),
                          limit=exact(f"canary answer other than {s.canary_expect!r}"))
                continue
            ref = answers.get("reference")
            ref_ok = ref == s.canary_expect
            if ok:
                status, reason = Status.PASS, f"answered {got!r}"
            elif ref is None:  # the reference gave no answer: a regression cannot be told from a model that cannot say it
                status, reason = Status.ERROR, (f"answered {got!r}, expected {s.canary_expect!r}; not judged: the reference "
                                                "gave no answer to compare with")
            elif not ref_ok:
                status = Status.WARN if got == ref else Status.FAIL
                reason = (f"answered {got!r}; the reference also misses {s.canary_expect!r} "
                          + ("and answers the same" if got == ref else f"but answers {ref!r}"))
            else:
                status, reason = Status.FAIL, f"answered {got!r}, expected {s.canary_expect!r}"
            evidence = [] if status == Status.PASS else [
                TextPair("canary answer", ref if ref is not None else s.canary_expect, got, None, s.canary_prompt)]
            ctx.check(checks.CANARY_CANDIDATE, status, reason,
                      CanaryFinding(first_request_s=_first_request_s(resp, retried, t0), retried=len(retried)), evidence,
                      limit=exact(f"canary answer other than {s.canary_expect!r}"))


def _first_request_s(resp: ChatResponse, retried: list[str], t0: float) -> float:
    """How long the canary took: the answer's own latency, or the wall clock since `t0` when it was
    asked again (the waits count). A re-judged run sees the recorded latency."""
    return time.perf_counter() - t0 if retried else resp.e2e_s


def _short(note: str) -> str:
    """A probe's note, at most 240 characters (the capability table holds the whole of it)."""
    note = note or "not supported"
    return note if len(note) <= 240 else note[:239] + "…"


def _yes(caps: Capabilities, feature: str) -> str:
    """yes / no / undetermined, for the capability tables."""
    return "yes" if getattr(caps, feature) else "undetermined" if caps.undetermined(feature) else "no"


def _get_json(ep: Endpoint, path: str) -> tuple[dict[str, Any], int | None]:
    """A GET's JSON object and status; an HTTP error status is an empty object with its status
    (the check judges it), a broken exchange or a body that is not JSON raises EndpointError."""
    try:
        return ep.get_json(path), 200
    except EndpointError as e:
        if e.kind in ("http", "unsupported") and e.status is not None:
            return {}, e.status
        raise
