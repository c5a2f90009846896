"""The extension point for targets: something that can be started, reached and stopped."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from gatekeeper.redact import NONE as _SHAPES_ONLY

DECLARABLE = ("dtype", "quantization", "kv_cache_dtype", "tp")  # plus free-form labels (label.<name>)
_DTYPES = {"fp32": "float32", "float32": "float32", "bf16": "bfloat16", "bfloat16": "bfloat16", "fp16": "float16",
           "float16": "float16", "half": "float16", "fp64": "float64", "float64": "float64"}


def normalise_dtype(value: str) -> str | None:
    """float32 / bfloat16 / float16 / float64 for their usual spellings, else None."""
    return _DTYPES.get(value.strip().lower())


@dataclass
class Started:
    """The outcome of starting a target: where it answers, or why it did not come up."""

    base_url: str
    model: str | None
    ready: bool
    startup_s: float | None = None
    error: str | None = None
    log_path: str | None = None


LAUNCH_PLACEHOLDERS = ("port", "model", "api_key")  # a launch command's template fields (process.py fills them)


@dataclass(frozen=True)
class TargetSpec:
    """A target as configured. `kind` is "bundled", "url" or "launch".

    bundled: `profile`, `engine_options` (EngineArgs names → values), `faults`, `model` (the
    checkpoint directory);
    url: `url` (the base, without `/v1`), `model` (the served model id), `api_key_env` (the NAME
    of the variable holding the key), `log_file` or `log_command` (where its log can be read),
    `health_path`;
    launch: `command` (template with {port}, {model} and {api_key}), `env`, `cwd`, `health_path`,
    `api_key_env`.
    Every kind: `declared`, the execution path the user declares (dtype, quantization,
    kv_cache_dtype, tp, label.<name>): tolerances follow the declared dtype.
    """

    kind: str
    profile: str = "optimized"
    model: str | None = None
    url: str | None = None
    api_key_env: str | None = None
    command: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    health_path: str = "/health"
    ready_timeout_s: float = 180.0
    engine_options: tuple[tuple[str, str], ...] = ()
    faults: tuple[str, ...] = ()
    log_file: str | None = None
    log_command: str | None = None
    declared: tuple[tuple[str, str], ...] = ()

    def describe(self) -> str:
        """A one-line, secret-free description for reports (URL userinfo, key flags and
        key-like query values masked)."""
        if self.kind == "bundled":
            opts = " ".join(f"{k}={v}" for k, v in self.engine_options)
            faults = f" faults={','.join(self.faults)}" if self.faults else ""
            text = f"bundled:{self.profile}" + (f" {opts}" if opts else "") + faults
        elif self.kind == "url":
            text = f"url {self.url}"
        else:
            text = f"launch `{self.command}`"
        return _SHAPES_ONLY.text(text)

    @property
    def dtype(self) -> str:
        """The activation dtype: the declared one, else a bundled target's engine option, else
        float32 (what the tolerances assume when nothing is said)."""
        declared = dict(self.declared).get("dtype")
        if declared:
            return declared
        value = dict(self.engine_options).get("dtype", "float32")
        return normalise_dtype(value) or value

    def assumed_path(self) -> dict[str, str]:
        """The execution path gatekeeper judges this target by: a bundled target's engine
        options (dtype, kv_cache_dtype, tp, fused_norm), then what was declared, and the dtype always."""
        engine = {k: v for k, v in self.engine_options if k in ("dtype", "kv_cache_dtype", "tp", "fused_norm")}
        return {**engine, **{k: v for k, v in self.declared if k in DECLARABLE}, "dtype": self.dtype}

    def api_key(self) -> str | None:
        """The key from the variable `api_key_env` names (read when needed, never stored)."""
        return os.environ.get(self.api_key_env) if self.api_key_env else None

    def secrets(self) -> list[str]:
        """What must not reach any output: the key, and a URL's password with the `user:password`
        pair in the forms a log may print it (as written, and base64 as in a Basic header)."""
        import base64
        from urllib.parse import unquote, urlsplit

        found = [k for k in [self.api_key()] if k]
        parts = urlsplit(self.url or "")
        if parts.password:
            pair = f"{unquote(parts.username or '')}:{unquote(parts.password)}"
            found += [parts.password, unquote(parts.password), pair, base64.b64encode(pair.encode()).decode()]
        return found

    def userinfo_ignored(self) -> bool:
        """A URL with `user:password@` and an API key: the key is sent (as Bearer), the userinfo not."""
        from urllib.parse import urlsplit

        return bool(self.url and urlsplit(self.url).username is not None and self.api_key())

    @property
    def key_source(self) -> str | None:
        """Where the key comes from, for error hints (never the key)."""
        return f"the environment variable {self.api_key_env}" if self.api_key_env else None


class Target(ABC):
    """A running (or reachable) engine."""

    spec: TargetSpec
    role: str

    @abstractmethod
    def start(self, log_dir: str) -> Started:
        """Start (or reach) the engine and wait until it is ready; never raises for a target
        that fails to come up — the failure is returned for the startup gate to report."""

    @abstractmethod
    def stop(self) -> None:
        """Stop the engine if gatekeeper started it."""

    def log_lines(self) -> list[str]:
        """Lines the engine printed so far (empty for targets without a log)."""
        return []

    def alive(self) -> bool:
        """Whether the engine process is still running (True when unknown)."""
        return True

    def has_log(self) -> bool:
        """Whether gatekeeper can read this engine's log."""
        return False

    def process_group(self) -> int | None:
        """The process group the engine runs in, where gatekeeper started it on this machine
        (None: a URL target, or not running)."""
        return None

    def api_key(self) -> str | None:
        """The API key, read from the environment variable the spec names."""
        return self.spec.api_key()


def stop_all(targets: Iterable[Target]) -> None:
    """Stop targets side by side: each `stop` waits for its engine to exit (a bundled engine in a
    fraction of a second, vLLM in seconds), and a run ends only once every one has."""
    todo = list(targets)
    if len(todo) < 2:
        for target in todo:
            target.stop()
        return
    with ThreadPoolExecutor(len(todo), thread_name_prefix="stop") as pool:
        for done in [pool.submit(target.stop) for target in todo]:
            done.result()
