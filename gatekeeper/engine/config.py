"""The model's architecture, read from and written to a Hugging Face `config.json`."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from gatekeeper.engine.errors import CheckpointError

SUPPORTED_MODEL_TYPES = {"qwen2": "Qwen2ForCausalLM", "llama": "LlamaForCausalLM"}


@dataclass(frozen=True)
class ModelConfig:
    """Architecture of a Qwen2/Llama decoder, with Hugging Face's field names."""

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    model_type: str = "qwen2"
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    max_position_embeddings: int = 2048
    tie_word_embeddings: bool = False
    attention_bias: bool = True
    head_dim: int = 0
    bos_token_id: int | None = None
    eos_token_id: int | list[int] | None = None
    torch_dtype: str = "float32"

    def __post_init__(self) -> None:
        if self.head_dim == 0:
            object.__setattr__(self, "head_dim", self.hidden_size // self.num_attention_heads)

    @classmethod
    def from_hf_dict(cls, d: dict) -> "ModelConfig":
        """Build from a parsed config.json; Qwen2 always has qkv bias, Llama only if stated."""
        model_type = d.get("model_type")
        if model_type not in SUPPORTED_MODEL_TYPES:
            raise CheckpointError(
                f"model_type {model_type!r} is not supported "
                f"(supported: {', '.join(SUPPORTED_MODEL_TYPES)})"
            )
        names = {f.name for f in fields(cls)}
        kw = {k: v for k, v in d.items() if k in names and v is not None}
        kw["attention_bias"] = True if model_type == "qwen2" else bool(d.get("attention_bias", False))
        if d.get("num_key_value_heads") is None:
            kw["num_key_value_heads"] = d["num_attention_heads"]
        if d.get("rope_scaling"):
            raise CheckpointError("rope_scaling is not supported by the bundled engine")
        try:
            return cls(**kw)
        except TypeError as e:
            raise CheckpointError(f"config.json is missing a required field: {e}") from None

    @classmethod
    def load(cls, model_dir: str | Path) -> "ModelConfig":
        """Read `config.json` from a checkpoint directory."""
        path = Path(model_dir) / "config.json"
        if not path.is_file():
            raise CheckpointError(f"{path}: not found (is this a Hugging Face checkpoint directory?)")
        try:
            return cls.from_hf_dict(json.loads(path.read_text()))
        except json.JSONDecodeError as e:
            raise CheckpointError(f"{path}:{e.lineno}: invalid JSON: {e.msg}") from None

    def to_hf_dict(self) -> dict:
        """The config.json content Hugging Face transformers expects."""
        d = asdict(self)
        d["architectures"] = [SUPPORTED_MODEL_TYPES[self.model_type]]
        d["hidden_act"] = "silu"
        d["use_cache"] = True
        if self.model_type == "qwen2":
            d.pop("attention_bias")
            d["use_sliding_window"] = False
        return d
