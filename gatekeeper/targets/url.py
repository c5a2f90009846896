"""A target that is already running somewhere: gatekeeper only talks to it."""

from __future__ import annotations

import os
import time

import httpx

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
        try:
            with httpx.Client(timeout=10.0) as http:
                http.get(url + self.spec.health_path)
        except httpx.HTTPError as e:
            return Started(url, self.spec.model, False, error=f"unreachable: {type(e).__name__}: {e}")
        return Started(url, self.spec.model, True, time.perf_counter() - t0)

    def stop(self) -> None:
        """Nothing to stop: gatekeeper did not start it."""
