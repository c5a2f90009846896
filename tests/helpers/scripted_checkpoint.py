"""A checkpoint that, under greedy decoding, says a fixed script: for tests that need real output.

A random model emits garbage; tests of tool-call parsing, stop strings or a canary need the
engine to produce known text through its normal path. This builds a real Qwen2 checkpoint whose
network is a bigram table: every layer's output projections are zero, so the final hidden state
is the normalised embedding of the current token, and the LM head maps each script token's
embedding to the next script token. Each script piece is its own added token, so every token of
the script is distinct and a bigram suffices. Decoding starts from `trigger`'s last token (the
chat template's `<|im_start|>assistant\\n`) and ends with `<|im_end|>`.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers

from gatekeeper.engine.chat_template import CHAT_TEMPLATE, SPECIAL_TOKENS

_CORPUS = ["Reply with exactly: OK", "hello world, the quick brown fox", "system user assistant tool",
           '{"name": "x", "arguments": {}}', "0123456789"] * 10
TRIGGER = "<|im_start|>assistant\n"

TOOL_SCRIPT = (
    "Let me check.",
    "<tool_call>",
    '{"name": "get_weather", ',
    '"arguments": {"city": ',
    '"Paris", "unit": "celsius"}}',
    "</tool_call>\n",
    "<tool_",
    'call>{"name": "set_alarm", "arguments": ',
    '{"time": "07:30", "days": ["monday"]}}',
    "</tool",
    "_call>",
)
"""Content, then two parallel Hermes calls whose tags are split across tokens. No piece may be a
proper substring of a tag the server appends to prompts (added tokens match inside prompt text)."""


def build_scripted_checkpoint(out: Path, script: tuple[str, ...], trigger: str = TRIGGER, seed: int = 0) -> Path:
    """Write config.json, model.safetensors and the tokenizer files for a model saying `script`."""
    from gatekeeper.engine.checkpoint import save_checkpoint
    from gatekeeper.engine.config import ModelConfig
    from gatekeeper.engine.model import CausalLM

    out.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(_CORPUS, trainers.BpeTrainer(
        vocab_size=300, special_tokens=list(SPECIAL_TOKENS), show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok.add_tokens([AddedToken(piece, normalized=False, special=False) for piece in script])
    tok.save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "chat_template": CHAT_TEMPLATE,
        "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", "bos_token": None}))
    eos = tok.token_to_id("<|im_end|>")
    ids = [tok.encode(trigger).ids[-1]] + [tok.token_to_id(piece) for piece in script] + [eos]
    assert len(set(ids)) == len(ids), "script tokens must be distinct"

    vocab = tok.get_vocab_size(with_added_tokens=True)
    cfg = ModelConfig(vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512, eos_token_id=eos)
    torch.manual_seed(seed)
    model = CausalLM(cfg)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.fill_(1.0)
            elif name.endswith(("o_proj.weight", "down_proj.weight")):
                p.zero_()  # layers add nothing: the hidden state stays the token's embedding
        emb = model.get_submodule("model.embed_tokens").weight  # [vocab, hidden]
        emb.normal_(0, 1)
        normed = emb / emb.pow(2).mean(-1, keepdim=True).add(cfg.rms_norm_eps).sqrt()  # what the final norm yields
        head = model.get_submodule("lm_head").weight  # [vocab, hidden]
        head.zero_()
        for cur, nxt in zip(ids, ids[1:]):
            head[nxt] += normed[cur] / cfg.hidden_size * 20.0  # logit ≈ 20 for the successor, ~N(0, 2.5) elsewhere
    save_checkpoint(model, cfg, out)
    return out
