"""The byte-level BPE tokenizer round-trips any text (NFC-normalised first, as Qwen2's pipeline does) and keeps
words free of leading spaces."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gatekeeper.engine.chat_template import CHAT_TEMPLATE, SPECIAL_TOKENS
from gatekeeper.engine.tokenizer import Tokenizer
from gatekeeper.training.tokenizer_train import build, save


@pytest.fixture(scope="module")
def tok(tmp_path_factory) -> Tokenizer:
    out = tmp_path_factory.mktemp("tok")
    save(build(vocab_size=600, seed=0, samples_per_family=100), out)
    return Tokenizer.from_dir(out)


@settings(max_examples=300, deadline=None)
@given(text=st.text())
def test_any_unicode_round_trips(tok, text):
    assert tok.decode(tok.encode(text), skip_special_tokens=False) == unicodedata.normalize("NFC", text)


@settings(max_examples=100, deadline=None)
@given(parts=st.lists(st.one_of(st.text(max_size=20), st.sampled_from(SPECIAL_TOKENS)), max_size=6))
def test_special_tokens_are_single_ids_and_round_trip(tok, parts):
    text = "".join(parts)
    ids = tok.encode(text)
    assert tok.decode(ids, skip_special_tokens=False) == unicodedata.normalize("NFC", text)


def test_special_tokens_take_the_last_ids_and_config_is_complete(tok):
    n = tok.vocab_size
    assert [tok.encode(t) for t in SPECIAL_TOKENS] == [[n - 3], [n - 2], [n - 1]]
    assert tok.eos_token_id == n - 1
    assert tok.chat_template == CHAT_TEMPLATE
    assert tok.config["pad_token"] == "<|endoftext|>"


def test_a_word_is_the_same_tokens_with_or_without_a_leading_space(tok):
    word = tok.encode("Paris")
    assert tok.encode("in Paris")[-len(word):] == word
    assert tok.encode(" 1234") == tok.encode(" ") + [i for c in "1234" for i in tok.encode(c)]
