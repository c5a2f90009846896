"""Structured outputs: requests' constraints as llguidance grammars, and token masks per step.

A request's constraint is one grammar text (llguidance's JSON-wrapped grammar format) built at
the HTTP edge from `response_format`, vLLM's `structured_outputs` extension or a forced tool
choice (`GrammarSpec`); the engine keeps one compiled matcher per distinct grammar and hands
each request a copy (`Grammars.matcher`). Each step, a constrained sequence's matcher gives the
bitmask of tokens the grammar allows next; the sampler masks the rest to −inf before choosing
and feeds the chosen token back (`engine/sampler.py`).

Why llguidance (evaluated beside xgrammar on gk-tiny's tokenizer, `benchmarks/grammar_backends.py`):
both compile a JSON schema in about a millisecond and mask a step in microseconds on CPU, but
llguidance is one 8 MB wheel with no dependencies that reads `tokenizer.json` directly and
compiles Lark with inline JSON schemas (`%json`), which is what Hermes tool calls need; xgrammar
needs transformers to describe the tokenizer and pulls triton (~1 GB) into a CPU engine.

JSON is emitted with Python's separators (`", "`, `": "`) and no free whitespace, as gk-tiny
learned it. An object schema that does not say whether other properties are allowed allows none
(`strict`: xgrammar's default strict mode, so vLLM's default backend, does the same); without it a
tiny model keeps inventing keys until `max_tokens` cuts the JSON. A schema keyword the compiler
does not implement is a `GrammarError` naming it (a 400 at the HTTP edge), never a silently
looser grammar.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

import llguidance
import llguidance.numpy as llg_numpy  # not llguidance.torch: its @torch.compile import pulls in torch._dynamo (~0.9 s per server start)
import torch

from gatekeeper.engine.errors import RequestError

BACKEND = f"llguidance {version('llguidance')}"
JSON_OPTIONS = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}
TOOL_START, TOOL_END = "<tool_call>", "</tool_call>"
_CACHE_SIZE = 128


class GrammarError(RequestError):
    """A constraint the backend cannot compile; `param` names the request field (a 400)."""

    def __init__(self, message: str, param: str) -> None:
        super().__init__(message)
        self.param = param


def strict(schema: Any) -> Any:
    """`schema` with `additionalProperties: false` on every object schema that sets neither it nor
    `unevaluatedProperties` (not inside `allOf`, whose branches would then exclude each other)."""
    if isinstance(schema, list):
        return [strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: (v if k in ("allOf", "const", "enum", "default", "examples") else
               {n: strict(s) for n, s in v.items()} if k in ("properties", "$defs", "definitions") and isinstance(v, dict) else
               strict(v) if k in ("items", "prefixItems", "anyOf", "oneOf", "additionalProperties") else v)
           for k, v in schema.items()}
    is_object = out.get("type") == "object" or (isinstance(out.get("type"), list) and "object" in out["type"]) \
        or "properties" in out
    if is_object and "additionalProperties" not in out and "unevaluatedProperties" not in out:
        out["additionalProperties"] = False
    return out


def _lark_str(text: str) -> str:
    """A Lark string literal for `text`."""
    return json.dumps(text, ensure_ascii=False)


@dataclass(frozen=True)
class GrammarSpec:
    """Builders of the grammar texts requests carry (`SamplingParams.grammar`)."""

    @staticmethod
    def json_schema(schema: Any) -> str:
        """Output that is one JSON value valid against `schema`."""
        if not isinstance(schema, dict | bool):
            raise GrammarError("a JSON schema must be an object", "response_format")
        return llguidance.LLMatcher.grammar_from_json_schema(strict(schema) if isinstance(schema, dict) else {},
                                                             defaults=JSON_OPTIONS)  # type: ignore[arg-type]

    @staticmethod
    def json_object() -> str:
        """Any JSON object (`response_format: {"type": "json_object"}`): any keys and values, as
        vLLM's backends allow; not `strict`, which would leave only `{}`."""
        return GrammarSpec.json_schema({"type": "object", "additionalProperties": True})

    @staticmethod
    def regex(pattern: str) -> str:
        """Output matching `pattern` in full."""
        return llguidance.LLMatcher.grammar_from_regex(pattern)

    @staticmethod
    def choice(options: Sequence[str]) -> str:
        """Exactly one of `options`."""
        if not options or not all(isinstance(o, str) for o in options):
            raise GrammarError("structured_outputs.choice must be a non-empty list of strings", "structured_outputs")
        return llguidance.LLMatcher.grammar_from_lark("start: " + " | ".join(_lark_str(o) for o in options))

    @staticmethod
    def tool_calls(tools: Sequence[dict[str, Any]], parallel: bool,
                   tags: tuple[str, str] = (_lark_str(TOOL_START), _lark_str(TOOL_END))) -> str:
        """One Hermes tool call (or several, newline-separated, when `parallel`) of one of `tools`
        (OpenAI tool dicts), in gk-tiny's framing `<tool_call>{"name": "N", "arguments": {…}}</tool_call>`,
        the arguments valid against the tool's `parameters` schema. `tags` spell the start and end
        tags in Lark (`Grammars.tool_tags`: a token of its own where the tokenizer has one)."""
        rules, names = [], []
        for i, tool in enumerate(tools):
            fn = tool["function"]
            params = fn.get("parameters") or {"type": "object"}
            head = '{"name": ' + json.dumps(fn["name"], ensure_ascii=False) + ', "arguments": '
            names.append(f"call_{i}")
            rules.append(f"call_{i}: {tags[0]} {_lark_str(head)} args_{i} {_lark_str('}')} {tags[1]}")
            rules.append(f"args_{i}: %json " + json.dumps({**strict(params), "x-guidance": JSON_OPTIONS}, ensure_ascii=False))
        start = 'start: call ("\\n" call)*' if parallel else "start: call"
        return llguidance.LLMatcher.grammar_from_lark("\n".join([start, "call: " + " | ".join(names), *rules]))


class Grammars:
    """The engine's grammar backend: the tokenizer as llguidance sees it and a cache of compiled
    matchers, one per distinct grammar text (least recently used dropped past 128)."""

    def __init__(self, tokenizer_json: str | Path, vocab_size: int, eos_token_ids: Sequence[int]) -> None:
        self.vocab_size = vocab_size  # the model's logit width (may exceed the tokenizer's)
        self.tokenizer = llguidance.LLTokenizer(str(tokenizer_json), n_vocab=vocab_size, eos_token=list(eos_token_ids))
        added = json.loads(Path(tokenizer_json).read_text()).get("added_tokens") or []
        self._added = {t["content"]: t["id"] for t in added if isinstance(t, dict) and "content" in t and "id" in t}
        self._cache: OrderedDict[str, llguidance.LLMatcher] = OrderedDict()
        self._lock = threading.Lock()  # the HTTP edge checks, the engine thread takes copies
        self.compiled = 0

    def tool_tags(self) -> tuple[str, str]:
        """The Hermes tags in Lark: `<[id]>` where the tokenizer has the tag as an added token
        (Qwen's `<tool_call>`; llguidance matches added tokens only as tokens, never as text),
        else the quoted text (gk-tiny writes the tags in ordinary tokens)."""
        return tuple(f"<[{self._added[t]}]>" if t in self._added else _lark_str(t)  # type: ignore[return-value]
                     for t in (TOOL_START, TOOL_END))

    def check(self, grammar: str, param: str) -> None:
        """Raise a `GrammarError` naming what the backend cannot compile."""
        self._compiled(grammar, param)

    def matcher(self, grammar: str) -> llguidance.LLMatcher:
        """A fresh matcher for one request (a copy of the cached compiled one)."""
        return self._compiled(grammar, "response_format").deep_copy()

    def _compiled(self, grammar: str, param: str) -> llguidance.LLMatcher:
        with self._lock:
            return self._compile_locked(grammar, param)

    def _compile_locked(self, grammar: str, param: str) -> llguidance.LLMatcher:
        hit = self._cache.get(grammar)
        if hit is not None:
            self._cache.move_to_end(grammar)
            return hit
        error, warnings = llguidance.LLMatcher.validate_grammar_with_warnings(grammar, self.tokenizer)
        if error:
            raise GrammarError(f"{param}: not supported by the {BACKEND} grammar backend: {'; '.join(warnings)}", param)
        m = llguidance.LLMatcher(self.tokenizer, grammar, log_level=0)
        if m.is_error():
            raise GrammarError(f"{param}: not supported by the {BACKEND} grammar backend: {m.get_error()}", param)
        self._cache[grammar] = m
        self.compiled += 1
        while len(self._cache) > _CACHE_SIZE:
            self._cache.popitem(last=False)
        return m


def allowed_mask(matchers: Sequence[llguidance.LLMatcher], vocab_size: int) -> torch.Tensor:
    """The tokens each matcher allows next: bool [len(matchers), vocab_size]."""
    packed = llg_numpy.allocate_token_bitmask(len(matchers), vocab_size)  # [M, ceil(V/32)] int32
    for row, m in enumerate(matchers):
        llg_numpy.fill_next_token_bitmask(m, packed, row)
    bits = torch.from_numpy(packed)
    shifts = torch.arange(32, dtype=torch.int32)  # [32]
    unpacked = (bits.unsqueeze(-1) >> shifts) & 1  # [M, W, 32]
    return unpacked.reshape(len(matchers), -1)[:, :vocab_size].bool()  # [M, V]
