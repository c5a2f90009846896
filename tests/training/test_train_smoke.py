"""A few training steps of a very small gk-tiny: it runs, exports an HF checkpoint, and a stopped
and resumed run lands on exactly the weights of an uninterrupted one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from gatekeeper.training import train, train_data
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


def _examples(lengths: list[int]) -> list[train_data.Example]:
    return [train_data.Example([1] * n, [True] * n, "chat") for n in lengths]


def test_least_cost_batches_keep_every_example_under_the_cap_with_less_padding():
    lengths = [40, 45, 90, 300, 310, 520, 600, 1433, 2048, 64, 64, 66, 128, 1000, 1010, 33]
    exs = _examples(lengths)
    for split in (train_data.micro_batches, train_data.least_cost_batches):
        batches = split(exs)
        assert sorted(id(e) for b in batches for e in b) == sorted(id(e) for e in exs)
        assert all(len(b) == 1 or max(len(e.ids) for e in b) * len(b) <= train_data.MICRO_BATCH_TOKENS for b in batches)

    def padded(batches):
        return sum(max(len(e.ids) for e in b) * len(b) for b in batches)

    assert padded(train_data.least_cost_batches(exs)) < padded(train_data.micro_batches(exs))
    assert train_data.least_cost_batches([]) == []


def test_batching_flag_trains_and_resume_demands_the_same_split(tmp_path, monkeypatch):
    monkeypatch.setattr(train_data, "TOKENS_PER_STEP", 1024)
    monkeypatch.setattr(train_data, "MAX_LEN", 512)
    run = tmp_path / "run"
    train.main(["--out", str(run), "--minutes", "0", *SMALL])
    assert torch.load(run / "state.pt", weights_only=False)["args"]["batching"] == "least-cost"  # the default
    with pytest.raises(SystemExit, match="least-cost"):  # greedy now: another trajectory, refused
        train.main(["--out", str(run), "--resume", "--batching", "greedy", *SMALL])


def test_weight_flag_overrides_the_main_mix_and_is_checked(tmp_path, capsys):
    shipped = Path(train.__file__).resolve().parents[1] / "models" / "gk-tiny"
    if not (shipped / "tokenizer.json").is_file():
        pytest.skip(f"no tokenizer in {shipped}")
    tok = Tokenizer.from_dir(shipped)
    plain, heavy = train_data.DataSource(tok, 0, 1000), train_data.DataSource(tok, 0, 1000, {"long_output": 50.0})
    plain.copy_ready_step = heavy.copy_ready_step = 0
    assert plain.mix(10)[1]["long_output"] < 1 and heavy.mix(10)[1]["long_output"] == 50.0
    assert heavy.mix(10)[1]["json"] == plain.mix(10)[1]["json"]  # the others stay
    for bad in ("long_output", "nosuch=2", "json=x", "json=-1"):
        with pytest.raises(SystemExit):
            train.main(["--out", str(tmp_path / "run"), "--weight", bad, *SMALL])
        assert "--weight" in capsys.readouterr().err
