"""Loading and saving Hugging Face checkpoints (config.json + safetensors, sharded or not)."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from gatekeeper.engine.config import ModelConfig
from gatekeeper.engine.errors import CheckpointError
from gatekeeper.engine.model import CausalLM


def _weight_files(model_dir: Path) -> list[Path]:
    single = model_dir / "model.safetensors"
    if single.is_file():
        return [single]
    index = model_dir / "model.safetensors.index.json"
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text())["weight_map"]
        except (json.JSONDecodeError, KeyError) as e:
            raise CheckpointError(f"{index}: not a safetensors index ({e})") from None
        files = [model_dir / name for name in sorted(set(weight_map.values()))]
        missing = [f.name for f in files if not f.is_file()]
        if missing:
            raise CheckpointError(f"{index}: shard files missing: {', '.join(missing)}")
        return files
    raise CheckpointError(f"{model_dir}: no model.safetensors or model.safetensors.index.json")


def load_state_dict(model_dir: str | Path) -> dict[str, torch.Tensor]:
    """All tensors of a checkpoint, merged across shards."""
    state: dict[str, torch.Tensor] = {}
    for path in _weight_files(Path(model_dir)):
        try:
            state.update(load_file(str(path)))
        except (SafetensorError, OSError) as e:
            raise CheckpointError(f"{path}: cannot read safetensors: {e}") from None
    return state


def load_model(
    model_dir: str | Path, dtype: torch.dtype = torch.float32, rope_theta: float | None = None
) -> tuple[CausalLM, ModelConfig]:
    """Build the model from a checkpoint directory, in eval mode, weights cast to `dtype`.

    RMSNorm weights stay fp32, as many released checkpoints keep them.
    """
    cfg = ModelConfig.load(model_dir)
    model = CausalLM(cfg, rope_theta=rope_theta)
    state = load_state_dict(model_dir)
    if cfg.tie_word_embeddings:
        state.pop("lm_head.weight", None)
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if not (cfg.tie_word_embeddings and k == "lm_head.weight")]
    if missing or unexpected:
        detail = f"missing {missing[:3]}" if missing else f"unexpected {unexpected[:3]}"
        raise CheckpointError(f"{model_dir}: weights do not match config.json ({detail})")
    for name, p in model.named_parameters():
        if not name.endswith("layernorm.weight") and name != "model.norm.weight":
            p.data = p.data.to(dtype)
    model.eval().requires_grad_(False)
    return model, cfg


def save_checkpoint(model: CausalLM, cfg: ModelConfig, out_dir: str | Path) -> None:
    """Write config.json and model.safetensors in Hugging Face's layout."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    if cfg.tie_word_embeddings:
        state.pop("lm_head.weight", None)
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    (out / "config.json").write_text(json.dumps(cfg.to_hf_dict(), indent=2) + "\n")
