"""The bundled model matches Hugging Face transformers on the same checkpoint."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from gatekeeper.engine.checkpoint import load_model  # noqa: E402
from gatekeeper.engine.errors import CheckpointError  # noqa: E402
from gatekeeper.engine.tokenizer import Tokenizer  # noqa: E402


def _hf_model(kind: str):
    torch.manual_seed(0)
    common = dict(
        vocab_size=320, hidden_size=64, intermediate_size=160, num_hidden_layers=3, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=512, rope_theta=10000.0,
    )
    if kind == "qwen2":
        return transformers.Qwen2ForCausalLM(transformers.Qwen2Config(tie_word_embeddings=False, **common)).eval()
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(tie_word_embeddings=True, attention_bias=False, **common)).eval()


@pytest.mark.parametrize("kind", ["qwen2", "llama"])
@pytest.mark.parametrize("sharded", [False, True])
def test_logits_match_transformers(tmp_path, kind, sharded):
    hf = _hf_model(kind)
    hf.save_pretrained(tmp_path, max_shard_size="60KB" if sharded else "5GB")
    if sharded:
        assert (tmp_path / "model.safetensors.index.json").is_file()
    ours, cfg = load_model(tmp_path)
    assert cfg.model_type == kind
    ids = torch.randint(0, 320, (2, 300), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        want = hf(ids).logits
        got = ours(ids)
    assert (want - got).abs().max().item() <= 1e-4


def test_missing_weights_is_a_clear_error(tmp_path):
    _hf_model("qwen2").save_pretrained(tmp_path)
    (tmp_path / "model.safetensors").unlink()
    with pytest.raises(CheckpointError, match="no model.safetensors"):
        load_model(tmp_path)


def test_chat_template_renders_like_transformers(tiny_model_dir):
    hf_tok = transformers.PreTrainedTokenizerFast.from_pretrained(str(tiny_model_dir))
    ours = Tokenizer.from_dir(tiny_model_dir)
    tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris and Oslo?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
            {"type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}},
        ]},
        {"role": "tool", "content": "18C"},
        {"role": "tool", "content": "9C"},
        {"role": "user", "content": "Thanks — 谢谢"},
    ]
    for t in (None, tools):
        want = hf_tok.apply_chat_template(messages, tools=t, tokenize=False, add_generation_prompt=True)
        assert ours.apply_chat_template(messages, tools=t) == want
    assert "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>" in want
