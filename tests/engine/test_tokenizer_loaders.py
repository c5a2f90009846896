"""The shipped gk-tiny tokenizes identically in every loader that serves it.

vLLM and transformers load a `model_type: qwen2` checkpoint through transformers' Qwen2Tokenizer,
which rebuilds the pre-tokenizer from Qwen2's regex whatever tokenizer.json says; the bundled
engine reads tokenizer.json with `tokenizers`. A checkpoint whose file disagrees with Qwen2's
pipeline tokenizes whitespace runs differently in the two (`x  an` was `x ĠĠ an` in one and
`x Ġ Ġ an` in the other), and gate 2 then compares logprobs of different token sequences. vLLM's
own /tokenize is compared with the bundled engine's in tests/targets/test_vllm.py.
"""

from __future__ import annotations

import pytest

transformers = pytest.importorskip("transformers")

from tokenizers import Tokenizer as RawTokenizer  # noqa: E402

from gatekeeper.engine.tokenizer import Tokenizer as EngineTokenizer  # noqa: E402
from paths import GK_TINY  # noqa: E402
from tokenizer_corpus import CORPUS  # noqa: E402


@pytest.fixture(scope="module")
def loaders():
    auto = transformers.AutoTokenizer.from_pretrained(str(GK_TINY))
    raw = RawTokenizer.from_file(str(GK_TINY / "tokenizer.json"))
    engine = EngineTokenizer.from_dir(GK_TINY)
    return auto, raw, engine


def test_transformers_loads_it_as_the_ecosystem_does(loaders):
    auto, _, _ = loaders
    assert type(auto).__name__ in ("Qwen2Tokenizer", "Qwen2TokenizerFast")


@pytest.mark.parametrize("text", CORPUS)
def test_every_loader_gives_the_same_ids(loaders, text):
    auto, raw, engine = loaders
    want = raw.encode(text, add_special_tokens=False).ids
    assert auto.encode(text, add_special_tokens=False) == want
    assert engine.encode(text) == want
    assert engine.decode(want, skip_special_tokens=False) == raw.decode(want, skip_special_tokens=False)


def test_the_chat_template_renders_to_the_same_ids(loaders):
    auto, _, engine = loaders
    messages = [{"role": "system", "content": "You are  a helpful\n\n  assistant."},
                {"role": "user", "content": CORPUS[2] + CORPUS[7]}]
    text = engine.apply_chat_template(messages)
    assert auto.apply_chat_template(messages, tokenize=False, add_generation_prompt=True) == text
    ids = auto.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
    ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
    assert list(ids) == engine.encode(text)


def test_words_still_carry_no_leading_space(loaders):
    """The vocabulary was trained on isolated pieces: Qwen2's " Paris" piece still encodes as the
    space and the word, so a word copies from prompt to answer as the same tokens."""
    _, raw, _ = loaders
    word = raw.encode("Paris").ids
    assert raw.encode("in Paris").ids[-len(word):] == word
