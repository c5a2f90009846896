"""Rollback hooks: what a ROLLBACK does besides its exit code — run a command (`kubectl argo
rollouts abort my-app`) or POST a webhook — with each outcome in the reports.

Hooks run only on ROLLBACK, never on PROMOTE or HOLD, after the verdict is decided and before
the reports are written (so the reports say what the hooks did). A hook that fails (non-zero
exit, a timeout, a non-2xx answer, a refused connection) is reported as failed and named on
stderr; it never changes the verdict or the exit code. Commands get the run in their
environment (GATEKEEPER_VERDICT, GATEKEEPER_RUN_ID, GATEKEEPER_RUN_DIR, GATEKEEPER_REASONS, one
reason per line); a webhook gets the same as JSON. Descriptions and output are redacted.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from gatekeeper.json_types import JsonObject
from gatekeeper.redact import Redactor

HOOK_TIMEOUT_S = 30.0
# The variables a hook command finds the run in (not run options: a hook may itself run `gatekeeper`).
HOOK_VARIABLES = ("GATEKEEPER_VERDICT", "GATEKEEPER_RUN_ID", "GATEKEEPER_RUN_DIR", "GATEKEEPER_REASONS")


@dataclass(frozen=True)
class Hook:
    """A command line or a webhook URL (`http://` / `https://`)."""

    target: str

    @property
    def kind(self) -> str:
        """"webhook" or "command"."""
        return "webhook" if self.target.startswith(("http://", "https://")) else "command"


@dataclass(frozen=True)
class HookOutcome:
    """What one hook did: `ok`, a one-line `detail` (exit status, HTTP status, the error) and
    the tail of its output (commands)."""

    kind: str
    target: str
    ok: bool
    detail: str
    duration_s: float
    output: tuple[str, ...] = ()

    def to_dict(self) -> JsonObject:
        """JSON-ready form (summary.json's `hooks`)."""
        return {"kind": self.kind, "target": self.target, "ok": self.ok, "detail": self.detail,
                "duration_s": round(self.duration_s, 3), "output": list(self.output)}


def parse_hooks(value: Any) -> list[str]:
    """`on_rollback` from a run config or flags: a string or a list of strings."""
    if value is None:
        return []
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) and v.strip() for v in items):
        raise ValueError("must be a command or webhook URL, or a list of them")
    for v in items:
        scheme = re.match(r"([A-Za-z][A-Za-z0-9+.-]*)://", v)
        if scheme and scheme.group(1).lower() not in ("http", "https"):
            raise ValueError(f"{scheme.group(0)} is not a webhook (http:// or https://), and a command does not start so")
        if not v.startswith(("http://", "https://")):
            try:
                shlex.split(v)
            except ValueError as e:
                raise ValueError(f"{v!r} is not a command line: {e}") from None
    return list(items)


def run_hooks(hooks: list[Hook], verdict: str, run_id: str, run_dir: Path, reasons: list[str],
              redactor: Redactor) -> tuple[HookOutcome, ...]:
    """Run every hook when the verdict is ROLLBACK (else nothing), in order."""
    if verdict != "ROLLBACK":
        return ()
    payload = {"verdict": verdict, "run_id": run_id, "run_dir": str(run_dir), "reasons": reasons}
    return tuple(_one(h, payload, redactor) for h in hooks)


def _one(hook: Hook, payload: dict[str, Any], redactor: Redactor) -> HookOutcome:
    t0 = time.perf_counter()
    shown = redactor.text(hook.target)
    if hook.kind == "webhook":
        try:
            r = httpx.post(hook.target, json=payload, timeout=HOOK_TIMEOUT_S)
            ok = 200 <= r.status_code < 300
            return HookOutcome("webhook", shown, ok, f"HTTP {r.status_code}", time.perf_counter() - t0)
        except httpx.HTTPError as e:
            return HookOutcome("webhook", shown, False, redactor.text(f"{type(e).__name__}: {e}")[:300],
                               time.perf_counter() - t0)
    said = (payload["verdict"], payload["run_id"], payload["run_dir"], "\n".join(payload["reasons"]))
    env = {**os.environ, **dict(zip(HOOK_VARIABLES, said, strict=True))}
    try:
        done = subprocess.run(shlex.split(hook.target), env=env, capture_output=True, text=True,
                              timeout=HOOK_TIMEOUT_S, check=False)
    except FileNotFoundError as e:
        return HookOutcome("command", shown, False, f"cannot run: {e.strerror}: {e.filename}", time.perf_counter() - t0)
    except subprocess.TimeoutExpired:
        return HookOutcome("command", shown, False, f"timed out after {HOOK_TIMEOUT_S:g} s", time.perf_counter() - t0)
    lines = tuple(redactor.text(line) for line in (done.stdout + done.stderr).splitlines()[-20:])
    return HookOutcome("command", shown, done.returncode == 0, f"exit status {done.returncode}",
                       time.perf_counter() - t0, lines)
