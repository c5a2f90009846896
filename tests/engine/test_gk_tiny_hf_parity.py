"""The shipped gk-tiny checkpoint loads in Hugging Face transformers and, greedy, produces the
same tokens there as on the bundled engine's reference path, on held-out evaluation prompts."""

from __future__ import annotations

import json
import random

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from gatekeeper import tasks  # noqa: E402
from gatekeeper.engine.llm import LLM  # noqa: E402
from gatekeeper.engine.sampling_params import SamplingParams  # noqa: E402
from paths import GK_TINY  # noqa: E402

MAX_NEW = 40


def _samples() -> list[tasks.Sample]:
    out = []
    for family in tasks.FAMILIES:
        rng = random.Random(f"parity:{family}")
        kw = {"needle": {"context_tokens": 400}, "multi_turn": {"rounds": 4}}.get(family, {})
        out += [tasks.generate(family, rng, **kw) for _ in range(2)]
    return out


@pytest.fixture(scope="module")
def hf():
    tok = transformers.AutoTokenizer.from_pretrained(str(GK_TINY))
    model = transformers.AutoModelForCausalLM.from_pretrained(str(GK_TINY), dtype=torch.float32).eval()
    return tok, model


@pytest.fixture(scope="module")
def llm():
    return LLM(str(GK_TINY), profile="reference")


def test_shipped_files_and_size():
    names = {"config.json", "model.safetensors", "generation_config.json", "tokenizer.json", "tokenizer_config.json"}
    assert names <= {p.name for p in GK_TINY.iterdir()}
    assert sum(p.stat().st_size for p in GK_TINY.iterdir()) <= 20 * 2**20
    config = json.loads((GK_TINY / "config.json").read_text())
    assert config["model_type"] == "qwen2" and config["architectures"] == ["Qwen2ForCausalLM"]
    assert config["max_position_embeddings"] >= 2048


def test_tokenizer_and_template_match_transformers(hf, llm):
    hf_tok, _ = hf
    for s in _samples():
        tools = list(s.tools) if s.tools else None
        text = llm.tokenizer.apply_chat_template(list(s.messages), tools=tools)
        assert hf_tok.apply_chat_template(list(s.messages), tools=tools, tokenize=False, add_generation_prompt=True) == text
        assert hf_tok(text, add_special_tokens=False)["input_ids"] == llm.tokenizer.encode(text)
    assert hf_tok.eos_token == "<|im_end|>" and hf_tok.pad_token == "<|endoftext|>"


def test_greedy_tokens_match_transformers(hf, llm):
    hf_tok, model = hf
    samples = _samples()
    prompts = [llm.chat_prompt(list(s.messages), list(s.tools) if s.tools else None) for s in samples]
    ours = llm.generate(prompts, SamplingParams(temperature=0, max_tokens=MAX_NEW))
    eos = model.generation_config.eos_token_id
    for s, ids, out in zip(samples, prompts, ours):
        with torch.no_grad():
            gen = model.generate(torch.tensor([ids]), do_sample=False, max_new_tokens=MAX_NEW,
                                 pad_token_id=hf_tok.pad_token_id)
        theirs = [t for t in gen[0, len(ids):].tolist() if t != eos]
        assert [t for t in out.token_ids if t != eos] == theirs, s.family
