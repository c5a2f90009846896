"""A few training steps of a very small gk-tiny: it runs, exports an HF checkpoint, and a stopped
and resumed run lands on exactly the weights of an uninterrupted one."""

from __future__ import annotations

import json

import torch

from gatekeeper.engine import train, train_data
from gatekeeper.engine.checkpoint import load_model
from gatekeeper.engine.tokenizer import Tokenizer

SMALL = ["--seed", "3", "--steps", "3", "--layers", "1", "--hidden", "64", "--threads", "1"]


def _weights(run_dir) -> dict[str, torch.Tensor]:
    return torch.load(run_dir / "state.pt", weights_only=False)["model"]


def test_few_steps_write_a_loadable_checkpoint_and_resume_is_exact(tmp_path, monkeypatch):
    monkeypatch.setattr(train_data, "TOKENS_PER_STEP", 1024)
    monkeypatch.setattr(train_data, "MAX_LEN", 512)
    straight, resumed, ship = tmp_path / "straight", tmp_path / "resumed", tmp_path / "ship"
    train.main(["--out", str(straight), "--ship", str(ship), *SMALL])
    train.main(["--out", str(resumed), "--minutes", "0", *SMALL])  # stops after one step
    assert torch.load(resumed / "state.pt", weights_only=False)["step"] == 1
    train.main(["--out", str(resumed), "--resume", *SMALL])

    a, b = _weights(straight), _weights(resumed)
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)

    config = json.loads((ship / "config.json").read_text())
    assert config["model_type"] == "qwen2" and config["architectures"] == ["Qwen2ForCausalLM"]
    assert config["max_position_embeddings"] >= 512
    gen = json.loads((ship / "generation_config.json").read_text())
    tok = Tokenizer.from_dir(ship)
    assert gen["eos_token_id"] == tok.eos_token_id == config["eos_token_id"]
    model, _ = load_model(ship)
    logits = model(torch.tensor([tok.encode("Reply with exactly: OK")]))
    assert torch.isfinite(logits).all()
