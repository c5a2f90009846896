"""Shared fixtures: small random Hugging Face checkpoints built locally (no hub, no network)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gatekeeper.engine.chat_template import CHAT_TEMPLATE, SPECIAL_TOKENS

CORPUS = [
    "Reply with exactly: OK",
    "The quick brown fox jumps over the lazy dog. 0123456789",
    '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}</tool_call>',
    "def add(a, b):\n    return a + b\n",
    "你好，世界。こんにちは。Привет, мир! 🙂",
    '{"name": "Ada", "age": 36, "tags": ["x", "y"]}',
    "system user assistant tool You are a helpful assistant.",
] * 20


def build_tokenizer(out: Path, vocab_size: int = 400) -> None:
    """A byte-level BPE over CORPUS, plus tokenizer_config.json.

    As in Qwen's vocabulary, the ChatML specials take the last ids, so id 0 is the byte `!` —
    what NaN logits decode to under argmax (the `!!!!` of docs/bug-classes.md#fused-norm-dtype).
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS, trainer)
    tok.add_special_tokens(list(SPECIAL_TOKENS))
    tok.save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "chat_template": CHAT_TEMPLATE,
                "eos_token": "<|im_end|>",
                "pad_token": "<|endoftext|>",
                "bos_token": None,
            }
        )
    )


def build_checkpoint(
    out: Path, *, seed: int = 0, model_type: str = "qwen2", tie: bool = False, max_len: int = 512,
    hidden: int = 64, layers: int = 2, heads: int = 4, kv_heads: int = 2,
) -> Path:
    """A random-weight decoder saved in HF layout with the tokenizer above."""
    import torch
    from tokenizers import Tokenizer

    from gatekeeper.engine.checkpoint import save_checkpoint
    from gatekeeper.engine.config import ModelConfig
    from gatekeeper.engine.model import CausalLM

    out.mkdir(parents=True, exist_ok=True)
    build_tokenizer(out)
    vocab = Tokenizer.from_file(str(out / "tokenizer.json")).get_vocab_size()
    eos = Tokenizer.from_file(str(out / "tokenizer.json")).token_to_id("<|im_end|>")
    cfg = ModelConfig(
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        model_type=model_type,
        max_position_embeddings=max_len,
        tie_word_embeddings=tie,
        attention_bias=model_type == "qwen2",
        eos_token_id=eos,
    )
    torch.manual_seed(seed)
    model = CausalLM(cfg)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.3)  # sharper than default init, so greedy choices are well separated
        for name, p in model.named_parameters():
            if "norm" in name:
                p.fill_(1.0)
    save_checkpoint(model, cfg, out)
    return out


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    """Path to a session-wide random Qwen2 checkpoint with our tokenizer and chat template."""
    pytest.importorskip("torch", reason="the bundled engine needs the `engine` extra")
    return build_checkpoint(tmp_path_factory.mktemp("tiny-qwen2"))


@pytest.fixture(scope="session")
def shared_run(tmp_path_factory):
    """`shared_run(*args)`: one real `gatekeeper run ARGS` per session, whichever tests ask for
    the same arguments (they only read the run; a test that changes its directory makes its own)."""
    from run_util import RunOutcome, gk_run

    runs: dict[tuple[str, ...], RunOutcome] = {}

    def run(*args: str, timeout: float = 900) -> RunOutcome:
        if args not in runs:
            runs[args] = gk_run(tmp_path_factory.mktemp("shared-run"), *args, timeout=timeout)
        return runs[args]
    return run


@pytest.fixture(scope="session")
def pg_server():
    """One throwaway PostgreSQL server for every pair-store test of the session (tests/helpers/
    pg_server.py), stopped and removed afterwards, also when tests fail."""
    from pg_server import find_binaries, start

    bin_dir = find_binaries()
    if bin_dir is None:
        pytest.skip("no PostgreSQL server binaries (initdb, pg_ctl) on the PATH or in /usr/lib/postgresql/*/bin: "
                    "install the postgresql package (Debian: apt-get install postgresql-15)")
    server = start(bin_dir)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def own_server():
    """A PostgreSQL server of the test's own, which it may stop and start again (`halt`, `resume`:
    the session's `pg_server` serves other tests meanwhile)."""
    from pg_server import find_binaries, start

    bin_dir = find_binaries()
    if bin_dir is None:
        pytest.skip("no PostgreSQL server binaries (initdb, pg_ctl): install the postgresql package")
    server = start(bin_dir)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(pg_server, request) -> str:
    """The URL of a fresh, empty database on the session's PostgreSQL server (password included)."""
    import re
    import uuid

    name = re.sub(r"\W", "_", request.node.name)[:40].lower()
    return pg_server.create_database(f"t_{name}_{uuid.uuid4().hex[:8]}")
