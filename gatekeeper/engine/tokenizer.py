"""The checkpoint's tokenizer (tokenizer.json) and chat template, rendered as HF renders it."""

from __future__ import annotations

import json
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment
from tokenizers import Tokenizer as HFTokenizer

from gatekeeper.engine.errors import CheckpointError, RequestError


def _raise_exception(message: str) -> None:
    raise jinja2.TemplateError(message)


def _tojson(x: Any, ensure_ascii: bool = False, indent: int | None = None, separators=None, sort_keys=False) -> str:
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _token_text(tok: Any) -> str | None:
    if isinstance(tok, dict):
        return tok.get("content")
    return tok


class Tokenizer:
    """Encoding, decoding and chat-template rendering for one checkpoint."""

    def __init__(self, tok: HFTokenizer, config: dict, eos_token_ids: list[int]) -> None:
        self._tok = tok
        self.config = config
        self.chat_template: str | None = config.get("chat_template")
        self.eos_token: str | None = _token_text(config.get("eos_token"))
        self.bos_token: str | None = _token_text(config.get("bos_token"))
        self.eos_token_ids = eos_token_ids
        self.vocab_size = tok.get_vocab_size(with_added_tokens=True)
        self.special_ids = {i for i, t in tok.get_added_tokens_decoder().items() if t.special}

    @classmethod
    def from_dir(cls, model_dir: str | Path) -> "Tokenizer":
        """Load tokenizer.json, tokenizer_config.json and the end-of-sequence ids."""
        d = Path(model_dir)
        tj = d / "tokenizer.json"
        if not tj.is_file():
            raise CheckpointError(f"{tj}: not found (the bundled engine needs a fast tokenizer.json)")
        try:
            tok = HFTokenizer.from_file(str(tj))
        except Exception as e:  # the tokenizers library raises a bare Exception on bad files
            raise CheckpointError(f"{tj}: cannot load: {e}") from None
        config = cls._read_json(d / "tokenizer_config.json")
        if "chat_template" not in config and (d / "chat_template.jinja").is_file():
            config["chat_template"] = (d / "chat_template.jinja").read_text()
        eos: set[int] = set()
        for source in (cls._read_json(d / "generation_config.json"), cls._read_json(d / "config.json")):
            value = source.get("eos_token_id")
            eos.update(value if isinstance(value, list) else [value] if value is not None else [])
        eos_text = _token_text(config.get("eos_token"))
        if eos_text is not None and tok.token_to_id(eos_text) is not None:
            eos.add(tok.token_to_id(eos_text))
        return cls(tok, config, sorted(eos))

    @staticmethod
    def _read_json(path: Path) -> dict:
        if not path.is_file():
            return {}
        try:
            return json.loads(path.read_text())
        except json.JSONDecodeError as e:
            raise CheckpointError(f"{path}:{e.lineno}: invalid JSON: {e.msg}") from None

    @property
    def eos_token_id(self) -> int | None:
        """The primary end-of-sequence id (the template's end-of-turn token for chat models)."""
        if self.eos_token is not None:
            tid = self._tok.token_to_id(self.eos_token)
            if tid is not None:
                return tid
        return self.eos_token_ids[0] if self.eos_token_ids else None

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        """Token ids of `text`; special-token strings in the text map to their ids."""
        return self._tok.encode(text, add_special_tokens=add_special_tokens).ids

    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
        """Text of `ids`; raises RequestError for ids outside the vocabulary."""
        bad = [i for i in ids if not 0 <= i < self.vocab_size]
        if bad:
            raise RequestError(f"token id {bad[0]} is outside the vocabulary (size {self.vocab_size})")
        return self._tok.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def id_to_token(self, token_id: int) -> str:
        """The vocabulary entry of one id, as a readable string (byte-level pieces decoded)."""
        return self._tok.decode([token_id], skip_special_tokens=False)

    def token_bytes(self, token_id: int) -> list[int]:
        """UTF-8 bytes of a token's text, as OpenAI's logprobs `bytes` field lists them."""
        return list(self.id_to_token(token_id).encode("utf-8"))

    @cached_property
    def _template(self) -> jinja2.Template:
        if not self.chat_template:
            raise RequestError("this model has no chat template; use /v1/completions")
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
        env.filters["tojson"] = _tojson
        env.globals["raise_exception"] = _raise_exception
        env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
        try:
            return env.from_string(self.chat_template)
        except jinja2.TemplateSyntaxError as e:
            raise CheckpointError(f"chat template line {e.lineno}: {e.message}") from None

    def apply_chat_template(
        self, messages: list[dict], tools: list[dict] | None = None, add_generation_prompt: bool = True, **kwargs: Any
    ) -> str:
        """Render a conversation to prompt text with the checkpoint's template."""
        try:
            return self._template.render(
                messages=messages,
                tools=tools or None,
                add_generation_prompt=add_generation_prompt,
                bos_token=self.bos_token or "",
                eos_token=self.eos_token or "",
                **kwargs,
            )
        except jinja2.TemplateError as e:
            raise RequestError(f"chat template failed on these messages: {e}") from None
