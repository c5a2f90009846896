"""The run options, written once: each option's run-config key, default, parser and type, the
GATEKEEPER_* variable and the flag that set it, the flag's help and the key's description.

`config/run_config.resolve` reads the layers through this table, `commands/options.py` makes the
click options of `gatekeeper run`, `matrix run` and `perf calibrate` from it, and `python -m
gatekeeper.schemas` the run config's JSON schema. `config/run_options.RunOptions` holds the
resolved values, one typed field per entry (a test keeps the two in step).

Two texts per option, as they say different things: `help` describes the run-config key (the
schema's description), `flag_help` the flag in `--help`, which appends the default
(`shown_default`, or the default itself) and the variable: `Seed. [0] [env: GATEKEEPER_SEED]`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from gatekeeper.config.option_parsers import (KEY_ENV_SCHEMA, TEXT_SCHEMA, as_env_name, as_gates, as_int, as_list,
                                              as_number, as_opts, as_target, as_text)
from gatekeeper.config.schema_check import SchemaError, check, must_be, shown
from gatekeeper.hooks import HOOK_VARIABLES, parse_hooks
from gatekeeper.report_links import parse_report_url


@dataclass(frozen=True)
class Option:
    """One run option: its name (YAML key), default, parser, the key's description, and its flag."""

    name: str
    default: Any
    parse: Callable[[Any], Any]
    help: str  # the run-config key's description (the schema's)
    flag_help: str = field(kw_only=True)  # the flag's help in --help, before its default and variable
    flag: str | None = field(default=None, kw_only=True)  # the flag's name when it differs (candidate_fault)
    metavar: str | None = field(default=None, kw_only=True)
    shown_default: str | None = field(default=None, kw_only=True)  # --help's [default] when the value says too little
    schema: dict[str, Any] = field(default_factory=dict, kw_only=True)  # the parsed value's type and range

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

    @property
    def flag_name(self) -> str:
        """The command-line flag that sets it: `--candidate-fault`."""
        return "--" + (self.flag or self.name).replace("_", "-")

    @property
    def repeatable(self) -> bool:
        """A list or mapping option: its flag may be given more than once."""
        return isinstance(self.default, (list, dict))

    @property
    def full_flag_help(self) -> str:
        """The flag's help as --help shows it: the text, the default, the variable."""
        shown_default = self.shown_default
        if shown_default is None and self.default not in (None, [], {}):
            value = self.default
            shown_default = (", ".join(value) if isinstance(value, list) else f"{value:g}" if isinstance(value, float)
                             else str(value))
        return self.flag_help + (f" [{shown_default}]" if shown_default else "") + f" [env: {self.env}]"


_NON_EMPTY_LIST = {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}}

OPTIONS: tuple[Option, ...] = (
    Option("reference", "bundled:reference", as_target, "reference target: bundled[:reference|optimized], a URL, or a "
           "mapping", flag_help="Reference target: bundled[:reference|optimized] or a URL."),
    Option("candidate", "bundled:optimized", as_target, "candidate target (same forms)",
           flag_help="Candidate target (same forms)."),
    Option("model", None, str, "the model: a checkpoint directory for bundled targets (default: the shipped gk-tiny), "
           "else the served model id URL and launch targets are asked for",
           flag_help="The model: a checkpoint directory for bundled targets [the shipped gk-tiny], else the served "
                     "model id URL/launch targets are asked for."),
    Option("served_model", None, str, "served model id for URL and launch targets (default: the first /v1/models lists)",
           flag_help="Served model id for URL and launch targets.", shown_default="the first /v1/models lists"),
    Option("policy", "gates/default.yaml", str, "gate policy file", flag_help="Gate policy YAML."),
    Option("golden", ["golden_sets/core.yaml"], as_list, "golden set files", flag_help="Golden set YAML (repeatable).",
           schema=_NON_EMPTY_LIST),
    Option("gates", None, as_gates, "gates to run, in stage order (default: all the policy enables)",
           flag_help="Comma-separated gates to run, e.g. startup,numerics,golden.", shown_default="all enabled",
           schema=_NON_EMPTY_LIST),
    Option("out", "reports", str, "directory under which reports/<run-id>/ is written",
           flag_help="Reports go to OUT/<run-id>/."),
    Option("seed", 0, as_int, "seed for generated prompts and sampling", flag_help="Seed.",
           schema={"type": "integer", "minimum": 0, "maximum": 2**32 - 1}),
    Option("timeout", 120.0, as_number, "each request's overall deadline in seconds",
           flag_help="Each request's overall deadline in seconds.",
           schema={"type": "number", "exclusiveMinimum": 0, "maximum": 86400, "description": "a request's deadline in seconds"}),
    Option("cases", [], as_list, "golden case ids (globs) to run instead of the policy's golden.cases; the run is partial",
           flag_help="Golden case ids to run (glob, repeatable), instead of the policy's golden.cases; the verdict says "
                     "partial.", metavar="GLOB", schema={"type": "array", "items": {"type": "string", "minLength": 1}}),
    Option("limit", None, as_int, "at most this many golden cases (the first chosen, in file order); the run is partial",
           flag_help="At most N golden cases (the first chosen, in file order); the verdict says partial.", metavar="N",
           schema={"type": "integer", "minimum": 1, "maximum": 100_000}),
    Option("candidate_faults", [], as_list, "faults for a bundled candidate (NAME or NAME=VALUE)", flag="candidate_fault",
           flag_help="Fault for a bundled candidate (repeatable; `gatekeeper faults` lists them).", metavar="NAME[=V]"),
    Option("candidate_opts", {}, as_opts, "engine options for a bundled candidate (KEY=VALUE)", flag="candidate_opt",
           flag_help="Engine option for a bundled candidate (repeatable).", metavar="KEY=VALUE"),
    Option("candidate_declare", {}, as_opts, "the candidate's declared execution path (dtype=, quantization=, "
           "kv_cache_dtype=, tp=, label.NAME=)", metavar="KEY=VALUE",
           flag_help="The candidate's declared execution path: dtype=bf16, quantization=fp8, kv_cache_dtype=, tp=4, "
                     "label.NAME=VALUE (repeatable). Tolerances follow the declared dtype."),
    Option("reference_declare", {}, as_opts, "the reference's declared execution path (same keys)", metavar="KEY=VALUE",
           flag_help="The reference's declared execution path (same keys)."),
    Option("reference_key_env", None, as_env_name, "the NAME of the variable holding the reference's API key (URL and "
           "launch targets; sets its api_key_env)", schema=KEY_ENV_SCHEMA, metavar="NAME",
           flag_help="The NAME of the environment variable holding the reference's API key (URL and launch targets; "
                     "sent as a Bearer token, never printed)."),
    Option("candidate_key_env", None, as_env_name, "the NAME of the variable holding the candidate's API key (same)",
           schema=KEY_ENV_SCHEMA, metavar="NAME",
           flag_help="The NAME of the variable holding the candidate's API key."),
    Option("reference_log_file", None, as_text, "a file holding a URL reference's log, for gate 1's log rules (sets "
           "its log_file)", schema=TEXT_SCHEMA, metavar="PATH",
           flag_help="A URL reference's log file, read for gate 1's log rules (a launched or bundled target's log is "
                     "captured already)."),
    Option("candidate_log_file", None, as_text, "a file holding a URL candidate's log (same)", schema=TEXT_SCHEMA,
           metavar="PATH", flag_help="A URL candidate's log file."),
    Option("reference_log_command", None, as_text, "a command printing a URL reference's log, e.g. `docker logs vllm` "
           "(sets its log_command)", schema=TEXT_SCHEMA, metavar="CMD",
           flag_help="A command printing a URL reference's log, e.g. 'docker logs vllm' (instead of "
                     "--reference-log-file)."),
    Option("candidate_log_command", None, as_text, "a command printing a URL candidate's log (same)", schema=TEXT_SCHEMA,
           metavar="CMD", flag_help="A command printing a URL candidate's log."),
    Option("reference_cache", None, as_text, "a directory caching the reference's answers across runs, keyed by its "
           "model, /version and declared path (gating several candidates asks the reference once)", schema=TEXT_SCHEMA,
           metavar="DIR",
           flag_help="Cache the reference's answers in DIR, keyed by its model, /version and declared path: later runs "
                     "against the same reference ask it only what is new (not gate 1, not the performance gate). Off "
                     "unless set."),
    Option("report_url", None, parse_report_url, "the http(s) URL the run directory's files are published under: "
           "summary.md's links become absolute (BASE/correctness.html#check-…), so they work in a PR comment",
           schema={"type": "string", "pattern": "^https?://[^/?#@]+(/[^?#]*)?$",
                   "description": "an http(s) URL without user name, password, query or fragment"}, metavar="BASE",
           flag_help="The http(s) URL this run directory's files are published under: summary.md's links become "
                     "BASE/correctness.html#check-… and BASE/<file>, so they work in a PR comment or a job summary.",
           shown_default="relative links"),
    Option("on_rollback", [], parse_hooks, "commands to run or webhook URLs to POST when the verdict is ROLLBACK",
           metavar="CMD|URL", flag_help="A command to run, or a webhook URL to POST, when the verdict is ROLLBACK "
                                        "(repeatable; never on PROMOTE or HOLD)."),
    Option("matrix", None, str, "an execution-path matrix file (matrices/*.yaml): run one of its cells, named by `cell`",
           flag_help="Matrix file (matrices/*.yaml): run one of its cells (--cell)."),
    Option("cell", None, str, "the id of the matrix cell to run (`gatekeeper matrix plan` lists them)",
           flag_help="The matrix cell to run, by id (`gatekeeper matrix plan M` lists them)."),
    Option("shadow_store", None, str, "judge gate 5 on the pairs a `gatekeeper shadow` store holds instead of "
           "replaying traffic (sets the policy's gates.shadow.store)",
           flag_help="Judge gate 5 on a `gatekeeper shadow` pair store instead of replaying traffic."),
)
BY_NAME = {o.name: o for o in OPTIONS}

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
