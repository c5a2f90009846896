"""The run's configuration in layers: built-in defaults → run-config YAML → GATEKEEPER_*
environment → command-line flags, read through one table so that `--help` and the docs can
list every option with where it may come from."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from gatekeeper.config.schema_check import SchemaError, check, must_be, shown
from gatekeeper.config.yaml_lines import load_yaml, line_of
from gatekeeper.errors import ConfigError
from gatekeeper.hooks import HOOK_VARIABLES, parse_hooks
from gatekeeper.report_links import parse_report_url

REPO_ROOT = Path(__file__).resolve().parent.parent.parent


def _as_list(value: Any) -> list[str]:
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, (list, tuple)) and all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value):
        return [str(v).strip() for v in value]
    raise ValueError("must be a list or a comma-separated string")


def _as_gates(value: Any) -> list[str]:
    names = _as_list(value)
    if not names:
        raise ValueError("names no gate: give gate ids (e.g. startup,numerics) or leave it unset to run every gate "
                         "the policy enables")
    return names


def _as_int(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise ValueError(f"must be an integer, not {shown(value)}")


def _as_number(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            pass
    raise ValueError(f"must be a number, not {shown(value)}")


def _as_opts(value: Any) -> dict[str, str]:
    if isinstance(value, dict):
        return {str(k): str(v) for k, v in value.items()}
    out = {}
    for item in _as_list(value):
        key, sep, val = item.partition("=")
        if not sep or not key:
            raise ValueError(f"{item!r} is not KEY=VALUE")
        out[key.strip().replace("-", "_")] = val.strip()
    return out


# A target's key variable, as a target's own `api_key_env` (targets/spec.py KEY_SCHEMAS) takes it.
KEY_ENV_SCHEMA = {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$",
                  "description": "the NAME of an environment variable; the key itself never goes in a file or a flag"}
_TEXT = {"type": "string", "minLength": 1}


def _as_env_name(value: Any) -> str:
    """An environment variable's name. The message never repeats the value: a user who pasted
    the key itself here must not see it echoed into a CI log."""
    name = value.strip() if isinstance(value, str) else ""
    if not re.fullmatch(KEY_ENV_SCHEMA["pattern"], name):
        raise ValueError("must be the NAME of an environment variable (letters, digits and _, not starting with a "
                         "digit) that holds the key, not the key itself")
    return name


def _as_text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"must be a non-empty string, not {shown(value)}")
    return value.strip()


@dataclass(frozen=True)
class Option:
    """One run option: its name (YAML key), default, environment variable, parser, help."""

    name: str
    default: Any
    parse: Callable[[Any], Any]
    help: str
    flag: str | None = None  # the flag's name when it differs from `name` (--candidate-fault for candidate_faults)
    schema: dict[str, Any] = field(default_factory=dict)  # the parsed value's type and range (also in the run-config schema)

    def value(self, raw: Any) -> Any:
        """`raw` (from the file, a variable or a flag) parsed and checked against `schema`;
        ValueError saying what is wrong."""
        value = self.parse(raw)
        try:
            check(value, self.schema)
        except SchemaError as e:
            if e.schema is not None and not e.path:  # the value as the file, variable or flag gave it
                raise ValueError(must_be(e.schema, shown(raw))) from None
            raise ValueError(e.message) from None
        return value

    @property
    def env(self) -> str:
        """The GATEKEEPER_* variable that sets it: the flag's name, upper-cased."""
        return "GATEKEEPER_" + (self.flag or self.name).upper()


OPTIONS: tuple[Option, ...] = (
    Option("reference", "bundled:reference", lambda v: v, "reference target: bundled[:reference|optimized], a URL, or a mapping"),
    Option("candidate", "bundled:optimized", lambda v: v, "candidate target (same forms)"),
    Option("model", None, str, "the model: a checkpoint directory for bundled targets (default: the shipped gk-tiny), "
           "else the served model id URL and launch targets are asked for"),
    Option("served_model", None, str, "served model id for URL and launch targets (default: the first /v1/models lists)"),
    Option("policy", "gates/default.yaml", str, "gate policy file"),
    Option("golden", ["golden_sets/core.yaml"], _as_list, "golden set files",
           schema={"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}}),
    Option("gates", None, _as_gates, "gates to run, in stage order (default: all the policy enables)",
           schema={"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}}),
    Option("out", "reports", str, "directory under which reports/<run-id>/ is written"),
    Option("seed", 0, _as_int, "seed for generated prompts and sampling", schema={"type": "integer", "minimum": 0,
                                                                                 "maximum": 2**32 - 1}),
    Option("timeout", 120.0, _as_number, "each request's overall deadline in seconds",
           schema={"type": "number", "exclusiveMinimum": 0, "maximum": 86400, "description": "a request's deadline in seconds"}),
    Option("cases", [], _as_list, "golden case ids (globs) to run instead of the policy's golden.cases; the run is partial",
           schema={"type": "array", "items": {"type": "string", "minLength": 1}}),
    Option("limit", None, _as_int, "at most this many golden cases (the first chosen, in file order); the run is partial",
           schema={"type": "integer", "minimum": 1, "maximum": 100_000}),
    Option("candidate_faults", [], _as_list, "faults for a bundled candidate (NAME or NAME=VALUE)", "candidate_fault"),
    Option("candidate_opts", {}, _as_opts, "engine options for a bundled candidate (KEY=VALUE)", "candidate_opt"),
    Option("candidate_declare", {}, _as_opts, "the candidate's declared execution path (dtype=, quantization=, "
           "kv_cache_dtype=, tp=, label.NAME=)"),
    Option("reference_declare", {}, _as_opts, "the reference's declared execution path (same keys)"),
    Option("reference_key_env", None, _as_env_name, "the NAME of the variable holding the reference's API key (URL and "
           "launch targets; sets its api_key_env)", schema=KEY_ENV_SCHEMA),
    Option("candidate_key_env", None, _as_env_name, "the NAME of the variable holding the candidate's API key (same)",
           schema=KEY_ENV_SCHEMA),
    Option("reference_log_file", None, _as_text, "a file holding a URL reference's log, for gate 1's log rules (sets "
           "its log_file)", schema=_TEXT),
    Option("candidate_log_file", None, _as_text, "a file holding a URL candidate's log (same)", schema=_TEXT),
    Option("reference_log_command", None, _as_text, "a command printing a URL reference's log, e.g. `docker logs vllm` "
           "(sets its log_command)", schema=_TEXT),
    Option("candidate_log_command", None, _as_text, "a command printing a URL candidate's log (same)", schema=_TEXT),
    Option("reference_cache", None, _as_text, "a directory caching the reference's answers across runs, keyed by its "
           "model, /version and declared path (gating several candidates asks the reference once)", schema=_TEXT),
    Option("report_url", None, parse_report_url, "the http(s) URL the run directory's files are published under: "
           "summary.md's links become absolute (BASE/correctness.html#check-…), so they work in a PR comment",
           schema={"type": "string", "pattern": "^https?://[^/?#@]+(/[^?#]*)?$",
                   "description": "an http(s) URL without user name, password, query or fragment"}),
    Option("on_rollback", [], parse_hooks, "commands to run or webhook URLs to POST when the verdict is ROLLBACK"),
    Option("matrix", None, str, "an execution-path matrix file (matrices/*.yaml): run one of its cells, named by `cell`"),
    Option("cell", None, str, "the id of the matrix cell to run (`gatekeeper matrix plan` lists them)"),
    Option("shadow_store", None, str, "judge gate 5 on the pairs a `gatekeeper shadow` store holds instead of "
           "replaying traffic (sets the policy's gates.shadow.store)"),
)
# GATEKEEPER_* variables that are not run options, and who reads them: resolve() ignores these (an
# exported script cache must not stop every command); any other GATEKEEPER_* name is an error.
NOT_OPTIONS: dict[str, str] = {
    "GATEKEEPER_VLLM_CACHE": "scripts/vllm_cpu.sh: where the vLLM venvs are made (docs/vllm.md)",
    "GATEKEEPER_LLAMA_CACHE": "scripts/llama_cpp.sh: where the llama.cpp venvs are made (docs/llama-cpp.md)",
    **{name: "set by gatekeeper for a rollback hook's command (gatekeeper/hooks.py)" for name in HOOK_VARIABLES},
    "GATEKEEPER_UPDATE_GOLD": "the test suite: rewrite the gold files",
    "GATEKEEPER_TEST_GK_TINY": "the test suite: another gk-tiny checkpoint to test",
    "GATEKEEPER_CHROMIUM": "the test suite: the headless browser",
    "GATEKEEPER_SCREENSHOTS": "the test suite: where screenshots go",
}
BY_NAME = {o.name: o for o in OPTIONS}


def resolve(config_path: str | None, env: Mapping[str, str], flags: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The effective options and, for each, the layer it came from ("default", the file, "env", "flag")."""
    values = {o.name: o.default for o in OPTIONS}
    source = {o.name: "default" for o in OPTIONS}
    if config_path:
        data = load_yaml(config_path)
        if not isinstance(data, dict):
            raise ConfigError("a run config must be a YAML mapping", config_path, line_of(data))
        for key, value in data.items():
            opt = BY_NAME.get(str(key).replace("-", "_"))
            if opt is None:
                raise ConfigError(f"unknown option (known: {', '.join(BY_NAME)})", config_path, line_of(data, key), str(key))
            try:
                values[opt.name] = value if opt.name in ("reference", "candidate") else opt.value(value)
            except (ValueError, TypeError) as e:
                raise ConfigError(str(e), config_path, line_of(data, key), str(key)) from None
            source[opt.name] = config_path
    known = {o.env for o in OPTIONS} | set(NOT_OPTIONS)
    for name in sorted(k for k in env if k.startswith("GATEKEEPER_") and k not in known):
        near = difflib.get_close_matches(name, sorted(o.env for o in OPTIONS), n=1, cutoff=0.6)
        raise ConfigError(f"{name} is not a gatekeeper option" + (f"; did you mean {near[0]}?" if near else
                          f" (options: {', '.join(o.env for o in OPTIONS)})"))
    for opt in OPTIONS:
        if opt.env in env:
            try:
                values[opt.name] = opt.value(env[opt.env])
            except (ValueError, TypeError) as e:
                raise ConfigError(f"{opt.env}: {e}") from None
            source[opt.name] = "env"
    for name, value in flags.items():
        if value is None or value == () or value == []:
            continue
        opt = BY_NAME[name]
        try:
            values[name] = opt.value(list(value) if isinstance(value, tuple) else value)
        except (ValueError, TypeError) as e:
            raise ConfigError(f"--{(opt.flag or name).replace('_', '-')}: {e}") from None
        source[name] = "flag"
    return values, source


def find_file(path: str) -> Path:
    """A relative path from the working directory, else from the project root, else among the
    installed package's shipped files (the defaults `gates/default.yaml` and
    `golden_sets/core.yaml` are found in a checkout and in an installed wheel alike)."""
    from gatekeeper.shipped import SHIPPED

    p = Path(path)
    if p.is_absolute() or p.exists():
        return p
    for base in (REPO_ROOT, SHIPPED):
        if (base / p).exists():
            return base / p
    return p
