"""The gate side's exception hierarchy: caught once in the CLI, shown as one line plus a hint."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gatekeeper import exit_codes


class GatekeeperError(Exception):
    """Base: anything a user or an endpoint can cause. `exit_code` is what the CLI exits with
    when the error ends a command; `hint` is shown after the message."""

    hint: str | None = None
    exit_code: int = exit_codes.HOLD


class Terminated(BaseException):
    """The process was told to stop (SIGTERM from CI cancellation or `timeout`, SIGHUP): raised in
    the main thread so that every `finally` runs — the engines a run started are stopped — and the
    command exits 128 + the signal's number, as a shell reports a process a signal ended. A
    BaseException, like KeyboardInterrupt: no `except Exception` (a gate's crash handler) keeps
    the run going."""

    def __init__(self, signum: int) -> None:
        import signal

        self.name = signal.Signals(signum).name
        super().__init__(f"stopped by {self.name}: no verdict; what this command started was stopped")
        self.exit_code = 128 + signum


class ConfigError(GatekeeperError):
    """Bad configuration (YAML, flags, environment): exit code 3. Carries file and line."""

    exit_code = exit_codes.USAGE

    def __init__(self, message: str, path: str | None = None, line: int | None = None, key: str | None = None,
                 hint: str | None = None):
        if hint is not None:
            self.hint = hint
        where = f"{path}:{line}: " if path and line else f"{path}: " if path else ""
        what = f"{key}: " if key else ""
        super().__init__(f"{where}{what}{message}")
        self.message, self.path, self.line, self.key = message, path, line, key


class TargetError(GatekeeperError):
    """A target could not be started or reached before the gates could begin (exit code 1 for
    the commands that need one engine: serve, golden record)."""

    exit_code = exit_codes.STARTUP_FAILURE

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        if hint is not None:
            self.hint = hint


@dataclass(frozen=True, kw_only=True)
class RequestFacts:
    """Where a failed request stood, for the evidence a report shows beside its ERROR: the target
    (`role`) and the gate that asked, what was asked (`request`, a short description; `key` and
    `occurrence` find its line in the run's answers/<role>.jsonl), when it was sent (UTC) and how
    long it ran, the transient answers retried first, the lines the target's log gained while
    it was in flight (a launched target's; none for a URL), what a broken stream had delivered
    (`partial`), and whether the target was alive around it: `before`, how its previous answer
    went; `after`, what its /health said just after the failure ("" when not asked)."""

    role: str
    gate: str
    request: str
    key: str
    occurrence: int
    started_at: str
    elapsed_s: float
    retries: int = 0
    log: tuple[str, ...] = ()
    partial: str = ""
    before: str = ""
    after: str = ""


class EndpointError(GatekeeperError):
    """An HTTP exchange with an endpoint failed; `kind` classifies it for the report.

    Kinds: "connect" (refused / DNS), "timeout", "http" (status >= 400), "malformed" (body is
    not the JSON shape expected), "stream" (SSE cut or garbled), "unsupported" (the endpoint
    says it does not do this: 404/405/501 or a 400 naming the feature). `retries_done`: the client
    already applied its bounded retry to this answer (gatekeeper/endpoints/retry.py), so asking again would
    multiply the bound. `facts`: where the request stood when it failed (`RequestFacts`), when known.
    """

    def __init__(self, kind: str, url: str, message: str, status: int | None = None, *, retries_done: bool = False):
        super().__init__(f"{kind} error at {url}" + (f" (HTTP {status})" if status else "") + f": {message}")
        self.kind, self.url, self.status, self.detail = kind, url, status, message
        self.retries_done = retries_done
        self.facts: RequestFacts | None = None  # set by the recording endpoint that saw it fail (tape/endpoint.py)
        self.partial = ""  # what a stream delivered before it broke (endpoints/wire.py)

    @property
    def refusal(self) -> bool:
        """Whether the server refused the request as such — a 4xx other than 408/429, or 501 — so
        the same request gets the same answer again (unlike a timeout, a rate limit or a crash)."""
        if self.kind not in ("http", "unsupported") or self.status is None:
            return False
        return (400 <= self.status < 500 and self.status not in (408, 429)) or self.status == 501


# Statuses a healthy server gives now and then to a request it serves at other times (a timeout, a rate
# limit, a balancer's or an overloaded engine's answer): never "refused alike", whatever the bodies say.
_TRANSIENT = (408, 429, 502, 503, 504)
# A traceback frame (`File "/venv/lib/.../app.py", line 376, in create_chat_completion`) and what follows
# it: where the server failed, which differs between builds, not what it said.
_FRAME = re.compile(r"""\s*File ["'].*""", re.S)
_PATH = re.compile(r"""(?:[A-Za-z]:)?(?:/[\w.@+-]+){2,}""")
_ID = re.compile(r"\b(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{16,})\b", re.I)


def gist(error: EndpointError) -> str:
    """What a failed answer says, without where the server failed: the message before any traceback
    frame, with file paths and request ids masked and whitespace collapsed ("" when it says nothing
    but its status, e.g. a bare "Internal Server Error")."""
    said = _FRAME.sub("", error.detail)
    said = " ".join(_ID.sub("<id>", _PATH.sub("<path>", said)).split())
    generic = {"", f"http {error.status}", "internal server error", "not found", "bad request"}
    return "" if said.lower() in generic else said


def refused_alike(*answers: object) -> EndpointError | None:
    """The refusal when every one of `answers` refuses the request alike (two targets lacking the same
    request feature), else None. Alike: one refusal status (a 4xx other than 408/429, or 501); or,
    whatever the status code, one status and bodies that say the same thing (`gist`), as a server
    that answers a request it cannot parse with a 500 and a validation message does. A transient
    status (408, 429, 502-504), a timeout, a refused connection or a broken stream is never a
    refusal, and a body that says nothing but its status is not evidence of one."""
    errors = [a for a in answers if isinstance(a, EndpointError)]
    if not answers or len(errors) != len(answers) or len({e.status for e in errors}) != 1:
        return None
    if all(e.refusal for e in errors):
        return errors[0]
    said = {gist(e) for e in errors}
    if all(e.kind == "http" and e.status not in _TRANSIENT for e in errors) and len(said) == 1 and "" not in said:
        return errors[0]
    return None
