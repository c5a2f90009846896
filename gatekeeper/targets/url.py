"""A target that is already running somewhere: gatekeeper only talks to it."""

from __future__ import annotations

import os
import time

from gatekeeper.client import Endpoint
from gatekeeper.errors import EndpointError
from gatekeeper.targets.interface import Started, Target, TargetSpec


class UrlTarget(Target):
    """An OpenAI-compatible server at a URL; the API key comes from a named variable."""

    def __init__(self, role: str, spec: TargetSpec) -> None:
        self.role = role
        self.spec = spec

    def api_key(self) -> str | None:
        """The key from the environment variable the spec names (never stored elsewhere)."""
        return os.environ.get(self.spec.api_key_env) if self.spec.api_key_env else None

    def start(self, log_dir: str) -> Started:
        """Check the server answers its health path once."""
        assert self.spec.url is not None
        url = self.spec.url.rstrip("/")
        t0 = time.perf_counter()
        ep = Endpoint(self.role, url, self.spec.model or "", self.api_key(), timeout_s=10.0)
        try:
            ep.get(self.spec.health_path)  # any answer means reachable; gate 1 judges the status
        except EndpointError as e:
            return Started(url, self.spec.model, False, error=f"unreachable: {e}")
        finally:
            ep.close()
        return Started(url, self.spec.model, True, time.perf_counter() - t0)

    def stop(self) -> None:
        """Nothing to stop: gatekeeper did not start it."""
