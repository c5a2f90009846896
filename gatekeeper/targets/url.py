"""A target that is already running somewhere: gatekeeper only talks to it."""

from __future__ import annotations

import shlex
import subprocess
import time
from pathlib import Path

from gatekeeper.endpoints.client import Endpoint
from gatekeeper.errors import EndpointError
from gatekeeper.targets.interface import Started, Target, TargetSpec

LOG_TAIL_LINES = 5000
LOG_COMMAND_TIMEOUT_S = 20.0


class UrlTarget(Target):
    """An OpenAI-compatible server at a URL. The API key comes from a named variable; its log,
    when the spec says where (`log_file`, or `log_command` such as `docker logs vllm`), is read
    for gate 1's log rules."""

    def __init__(self, role: str, spec: TargetSpec) -> None:
        self.role = role
        self.spec = spec
        self.log_error: str | None = None

    def start(self, log_dir: str) -> Started:
        """Check the server answers: its health path, else `/v1/models` (a server without
        /health is reachable all the same; gate 1 notes the missing endpoint)."""
        assert self.spec.url is not None
        url = self.spec.url
        t0 = time.perf_counter()
        ep = Endpoint(self.role, url, self.spec.model or "", self.api_key(), timeout_s=10.0, key_source=self.spec.key_source,
                      watch_death=False)
        try:
            try:
                r = ep.get(self.spec.health_path)
                if r.status_code in (404, 405, 501):
                    ep.get("/v1/models")
            except EndpointError as e:
                if e.kind != "auth":  # a refused key is reachable: gate 1 reports it
                    return Started(url, self.spec.model, False, error=f"unreachable: {e}")
        finally:
            ep.close()
        return Started(url, self.spec.model, True, time.perf_counter() - t0)

    def stop(self) -> None:
        """Nothing to stop: gatekeeper did not start it."""

    def has_log(self) -> bool:
        """Whether the spec says where this server's log is."""
        return bool(self.spec.log_file or self.spec.log_command)

    def log_lines(self) -> list[str]:
        """The last lines of its log (from `log_file` or `log_command`), or [] with `log_error` set."""
        self.log_error = None
        try:
            if self.spec.log_file:
                text = Path(self.spec.log_file).expanduser().read_text(encoding="utf-8", errors="replace")
            elif self.spec.log_command:
                done = subprocess.run(shlex.split(self.spec.log_command), capture_output=True, text=True,
                                      timeout=LOG_COMMAND_TIMEOUT_S, errors="replace", check=False)
                if done.returncode != 0 and not (done.stdout or done.stderr):
                    self.log_error = f"log_command exited with code {done.returncode}"
                text = done.stdout + done.stderr
            else:
                return []
        except (OSError, subprocess.SubprocessError) as e:
            self.log_error = f"cannot read the log: {e}"
            return []
        return text.splitlines()[-LOG_TAIL_LINES:]
