"""The gate side's exception hierarchy: caught once in the CLI, shown as one line plus a hint."""

from __future__ import annotations


class GatekeeperError(Exception):
    """Base: anything a user or an endpoint can cause."""

    hint: str | None = None


class ConfigError(GatekeeperError):
    """Bad configuration (YAML, flags, environment): exit code 3. Carries file and line."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None, key: str | None = None):
        where = f"{path}:{line}: " if path and line else f"{path}: " if path else ""
        what = f"{key}: " if key else ""
        super().__init__(f"{where}{what}{message}")
        self.path, self.line, self.key = path, line, key


class TargetError(GatekeeperError):
    """A target could not be started or reached before the gates could begin."""


class EndpointError(GatekeeperError):
    """An HTTP exchange with an endpoint failed; `kind` classifies it for the report.

    Kinds: "connect" (refused / DNS), "timeout", "http" (status >= 400), "malformed" (body is
    not the JSON shape expected), "stream" (SSE cut or garbled), "unsupported" (the endpoint
    says it does not do this: 404/405/501 or a 400 naming the feature).
    """

    def __init__(self, kind: str, url: str, message: str, status: int | None = None):
        super().__init__(f"{kind} error at {url}" + (f" (HTTP {status})" if status else "") + f": {message}")
        self.kind, self.url, self.status, self.detail = kind, url, status, message
