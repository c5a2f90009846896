"""Golden sets: versioned YAML files of chat cases with assertions, loaded and validated.

    version: "1.0"
    name: core
    cases:
      - id: canary-ok
        family: short_answer
        messages: [{role: user, content: "Reply with exactly: OK"}]
        max_tokens: 16
        stream_variant: false        # optional; true for tool-call and JSON cases
        tools: [...]                 # optional OpenAI-style tool definitions
        tool_choice: auto            # optional
        response_format: {type: json_schema, json_schema: {name: facts, schema: {...}}}  # optional
        assert:
          - {type: equals, value: OK}
          - {type: finish_reason, value: stop}

Everything is checked at load time — unknown keys, types, duplicate ids, unknown assertion types,
bad assertion parameters — and every error is a `ConfigError` naming the file, the line and the
key, found from the YAML node tree's marks, so a typo in case 37 points at its line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gatekeeper.config.settings import MAX_ANSWER_TOKENS
from gatekeeper.endpoints.chat_types import ChatMessage, ToolDefinition
from gatekeeper.errors import ConfigError
from gatekeeper.golden.assertion_base import Assertion, SpecError
from gatekeeper.golden.assertions import build_assertion

TOP_KEYS = {"version", "name", "description", "cases"}
CASE_KEYS = {"id", "family", "description", "messages", "tools", "tool_choice", "response_format", "max_tokens",
             "stream_variant", "assert"}
RESPONSE_FORMATS = ("text", "json_object", "json_schema")
ROLES = {"system", "user", "assistant", "tool"}
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")

KeyPath = tuple[Any, ...]


@dataclass(frozen=True, kw_only=True)
class GoldenCase:
    """One prompt with its request options and assertions. `line` is where it starts in the file."""

    id: str
    family: str
    messages: tuple[ChatMessage, ...]
    assertions: tuple[Assertion, ...]
    max_tokens: int = 64
    tools: tuple[ToolDefinition, ...] | None = None
    tool_choice: Any = None
    stream_variant: bool = False
    description: str | None = None
    line: int | None = None
    response_format: dict[str, Any] | None = None  # sent as is: the case is about the engine enforcing it

    @property
    def expects_json(self) -> bool:
        """Whether the answer must be JSON (a json_schema assertion): streams compare parsed JSON."""
        return any(a.type == "json_schema" for a in self.assertions)

    @property
    def prompt_text(self) -> str:
        """The last user message, for reports."""
        users = [m.get("content") or "" for m in self.messages if m.get("role") == "user"]
        return users[-1] if users else ""


@dataclass(frozen=True)
class GoldenSet:
    """A loaded golden set: its name, version, source file and cases in file order."""

    name: str
    version: str
    path: str
    cases: tuple[GoldenCase, ...]
    description: str = ""

    def case(self, case_id: str) -> GoldenCase:
        """The case with this id (KeyError if absent)."""
        for c in self.cases:
            if c.id == case_id:
                return c
        raise KeyError(case_id)


def load_golden_set(path: str | Path) -> GoldenSet:
    """Read and validate one golden-set YAML file; ConfigError (file:line: key: ...) if invalid."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise ConfigError(f"cannot read golden set: {e.strerror or e}", str(p)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError("not UTF-8", str(p), data[:e.start].count(b"\n") + 1) from None
    return parse_golden_set(text, str(p))


def load_golden_sets(paths: list[str | Path]) -> list[GoldenSet]:
    """Load several sets; case ids must be unique within each set."""
    return [load_golden_set(p) for p in paths]


def parse_golden_set(text: str, path: str = "<string>") -> GoldenSet:
    """Validate YAML text as a golden set; `path` is used in error messages."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.load(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        raise ConfigError(f"invalid YAML: {e.problem or e}", path, mark.line + 1 if mark else None) from None
    except yaml.YAMLError as e:
        raise ConfigError(f"invalid YAML: {e}", path) from None
    except RecursionError:
        raise ConfigError("YAML nested too deeply", path) from None
    return _Validator(path, _marks(root)).golden_set(data)


def _marks(node: yaml.Node | None, at: KeyPath = (), out: dict[KeyPath, int] | None = None) -> dict[KeyPath, int]:
    """Line (1-based) of every node, keyed by its path of keys and indices from the root."""
    out = {} if out is None else out
    if node is None:
        return out
    out[at] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            key = k.value if isinstance(k, yaml.ScalarNode) else None
            out[at + (key,)] = k.start_mark.line + 1  # the key's own line, for "missing/bad key" errors
            _marks(v, at + (key, "<value>"), out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _marks(item, at + (i,), out)
    return out


class _Validator:
    """Builds the typed set from loaded YAML, raising ConfigError with the line of each problem."""

    def __init__(self, path: str, marks: dict[KeyPath, int]):
        self.path, self.marks = path, marks

    def line(self, at: KeyPath) -> int | None:
        """The line of the key (or item) at `at`, falling back to its nearest ancestor."""
        while at:
            if at in self.marks:
                return self.marks[at]
            at = at[:-1]
        return self.marks.get(())

    def fail(self, at: KeyPath, message: str) -> ConfigError:
        """A ConfigError at path `at`; the key shown is the dotted path (cases[3].assert[1].type)."""
        return ConfigError(message, self.path, self.line(at), _dotted(at) or None)

    def golden_set(self, data: Any) -> GoldenSet:
        if not isinstance(data, dict):
            raise self.fail((), "a golden set must be a mapping with `version` and `cases`")
        for key in data:
            if key not in TOP_KEYS:
                raise self.fail((key,), f"unknown top-level key; allowed: {', '.join(sorted(TOP_KEYS))}")
        if "version" not in data or not isinstance(data["version"], (str, int, float)) or isinstance(data["version"], bool):
            raise self.fail(("version",), "a golden set needs a `version` (string or number)")
        cases = data.get("cases")
        if not isinstance(cases, list) or not cases:
            raise self.fail(("cases",), "`cases` must be a non-empty list")
        built: list[GoldenCase] = []
        seen: dict[str, int | None] = {}
        for i, raw in enumerate(cases):
            case = self.case(("cases", "<value>", i), raw)
            if case.id in seen:
                raise self.fail(("cases", "<value>", i, "id"), f"duplicate case id {case.id!r} (first at line {seen[case.id]})")
            seen[case.id] = case.line
            built.append(case)
        name = data.get("name") or Path(self.path).stem
        return GoldenSet(str(name), str(data["version"]), self.path, tuple(built), str(data.get("description") or ""))

    def case(self, at: KeyPath, raw: Any) -> GoldenCase:
        if not isinstance(raw, dict):
            raise self.fail(at, "a case must be a mapping")
        for key in raw:
            if key not in CASE_KEYS:
                raise self.fail(at + (key,), f"unknown case key; allowed: {', '.join(sorted(CASE_KEYS))}")
        for key in ("id", "family", "messages", "assert"):
            if key not in raw:
                raise self.fail(at, f"case is missing `{key}`")
        case_id, family = raw["id"], raw["family"]
        if not isinstance(case_id, str) or not _ID.match(case_id):
            raise self.fail(at + ("id",), "id must be letters, digits, '-', '_' or '.'")
        if not isinstance(family, str) or not family:
            raise self.fail(at + ("family",), "family must be a non-empty string")
        max_tokens = raw.get("max_tokens", 64)
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or not 1 <= max_tokens <= MAX_ANSWER_TOKENS:
            raise self.fail(at + ("max_tokens",), f"max_tokens must be a positive integer, at most {MAX_ANSWER_TOKENS}")
        if not isinstance(raw.get("stream_variant", False), bool):
            raise self.fail(at + ("stream_variant",), "stream_variant must be true or false")
        tools = self.tools(at + ("tools", "<value>"), raw.get("tools"))
        asserts = raw["assert"]
        if not isinstance(asserts, list) or not asserts:
            raise self.fail(at + ("assert",), "`assert` must be a non-empty list")
        assertions = tuple(self.assertion(at + ("assert", "<value>", j), spec) for j, spec in enumerate(asserts))
        return GoldenCase(id=case_id, family=family, messages=self.messages(at + ("messages", "<value>"), raw["messages"]),
                          assertions=assertions, max_tokens=max_tokens, tools=tools, tool_choice=raw.get("tool_choice"),
                          stream_variant=raw.get("stream_variant", False), description=raw.get("description"),
                          line=self.line(at), response_format=self.response_format(at + ("response_format",), raw))

    def response_format(self, at: KeyPath, raw: dict[str, Any]) -> dict[str, Any] | None:
        rf = raw.get("response_format")
        if rf is None:
            return None
        if not isinstance(rf, dict) or rf.get("type") not in RESPONSE_FORMATS:
            raise self.fail(at, f"response_format must be a mapping whose type is one of {', '.join(RESPONSE_FORMATS)}")
        if rf["type"] == "json_schema" and not isinstance((rf.get("json_schema") or {}).get("schema"), dict):
            raise self.fail(at, "a json_schema response_format needs json_schema: {name: ..., schema: {...}}")
        return rf

    def messages(self, at: KeyPath, raw: Any) -> tuple[ChatMessage, ...]:
        if not isinstance(raw, list) or not raw:
            raise self.fail(at[:-1], "messages must be a non-empty list")
        for i, m in enumerate(raw):
            if not isinstance(m, dict) or m.get("role") not in ROLES:
                raise self.fail(at + (i, "role"), f"each message needs a role in {sorted(ROLES)}")
            content_ok = isinstance(m.get("content"), str) or (m["role"] == "assistant" and m.get("tool_calls"))
            if not content_ok:
                raise self.fail(at + (i, "content"), "message content must be a string")
        return tuple(raw)

    def tools(self, at: KeyPath, raw: Any) -> tuple[ToolDefinition, ...] | None:
        if raw is None:
            return None
        if not isinstance(raw, list):
            raise self.fail(at[:-1], "tools must be a list of function definitions")
        for i, t in enumerate(raw):
            fn = t.get("function") if isinstance(t, dict) else None
            if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                raise self.fail(at + (i,), "each tool needs {type: function, function: {name, parameters}}")
        return tuple(raw)

    def assertion(self, at: KeyPath, spec: Any) -> Assertion:
        try:
            return build_assertion(spec)
        except SpecError as e:
            raise self.fail(at + ((e.key,) if e.key else ()), str(e)) from None


def _dotted(at: KeyPath) -> str:
    """('cases', '<value>', 3, 'assert', '<value>', 1, 'type') -> 'cases[3].assert[1].type'."""
    out = ""
    for part in at:
        if part == "<value>":
            continue
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out
