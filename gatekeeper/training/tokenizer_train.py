"""Train gk-tiny's byte-level BPE tokenizer on the synthetic task corpus.

The vocabulary is learned on isolated pieces: letter runs, single digits, punctuation runs and
whitespace runs (`TRAIN_SPLIT`). No merge therefore spans a space and a letter: a word never
carries its leading space, so `Paris` in a prompt and `Paris` at the start of an answer are the
same tokens (copying was measurably better that way), and single digits make numbers copy and add
digit by digit.

The tokenizer that ships splits text with Qwen2's pre-tokenizer (`QWEN2_SPLIT`, NFC first), the
one the ecosystem builds for a `model_type: qwen2` checkpoint: transformers' Qwen2Tokenizer
rebuilds exactly this pipeline from the vocabulary and merges, vLLM loads the checkpoint through
it, and llama.cpp's converter knows it. One checkpoint thus tokenizes identically in the bundled
engine (`tokenizers` reading tokenizer.json), transformers, vLLM and a GGUF conversion. Since no
merge crosses a class boundary, Qwen2's pieces (" an", "\"get") still encode as the separate
tokens the vocabulary was trained on; only whitespace runs before a word are cut differently.

    python -m gatekeeper.training.tokenizer_train --out DIR [--vocab-size 2048] [--seed 0]
    python -m gatekeeper.training.tokenizer_train --adopt DIR   # give an existing tokenizer.json Qwen2's pre-tokenizer
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Iterator

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from gatekeeper import tasks
from gatekeeper.engine.chat_template import CHAT_TEMPLATE, SPECIAL_TOKENS
from gatekeeper.engine.tokenizer import Tokenizer as ChatTokenizer

TRAIN_SPLIT = r"\p{L}+|\p{N}|[^\s\p{L}\p{N}]+|\s+"
# transformers' Qwen2Tokenizer (and Qwen2's own tokenizer.json), verbatim.
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
               r"|\s+(?!\S)|\s+")
EOS_TOKEN, PAD_TOKEN = "<|im_end|>", "<|endoftext|>"


def chat_renderer() -> ChatTokenizer:
    """A renderer for CHAT_TEMPLATE exactly as the engine (and HF) renders it; encoding unused."""
    return ChatTokenizer(Tokenizer(models.BPE()), {"chat_template": CHAT_TEMPLATE, "eos_token": EOS_TOKEN}, [])


def render(sample: tasks.Sample, renderer: ChatTokenizer) -> str:
    """Prompt text (with the generation prompt) followed by the answer and end-of-turn."""
    prompt = renderer.apply_chat_template(list(sample.messages), tools=list(sample.tools or []) or None)
    return prompt + sample.answer + EOS_TOKEN + "\n"


def corpus(seed: int, samples_per_family: int) -> Iterator[str]:
    """Rendered samples of every family, deterministic for `seed`."""
    rng = random.Random(seed)
    renderer = chat_renderer()
    for family in tasks.FAMILIES:
        n = samples_per_family // 8 if family in ("needle", "multi_turn") else samples_per_family
        for _ in range(n):
            kw = {"context_tokens": rng.randint(64, 512)} if family == "needle" else {}
            yield render(tasks.generate(family, rng, **kw), renderer)


def build(vocab_size: int = 2048, seed: int = 0, samples_per_family: int = 3000) -> Tokenizer:
    """Train the tokenizer; the special tokens take the last ids, in SPECIAL_TOKENS order."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(TRAIN_SPLIT), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - len(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    # The special strings are split out before training so they never become merges.
    texts = (t.replace("<|im_start|>", "\n").replace(EOS_TOKEN, "\n") for t in corpus(seed, samples_per_family))
    tok.train_from_iterator(texts, trainer=trainer)
    tok.add_special_tokens(list(SPECIAL_TOKENS))
    return adopt_qwen2_pretokenizer(tok)


def adopt_qwen2_pretokenizer(tok: Tokenizer) -> Tokenizer:
    """Give a trained tokenizer the normalizer and pre-tokenizer transformers builds for Qwen2
    (NFC, Qwen2's split regex, byte-level without its own regex); vocabulary and merges unchanged."""
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    return tok


def save(tok: Tokenizer, out_dir: str | Path) -> None:
    """Write tokenizer.json and tokenizer_config.json (with the chat template)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok.save(str(out / "tokenizer.json"), pretty=True)
    added = {str(tok.token_to_id(t)): {"content": t, "lstrip": False, "rstrip": False, "normalized": False,
                                       "single_word": False, "special": True} for t in SPECIAL_TOKENS}
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "added_tokens_decoder": added,
        "bos_token": None,
        "eos_token": EOS_TOKEN,
        "pad_token": PAD_TOKEN,
        "unk_token": None,
        "model_max_length": 2048,
        "clean_up_tokenization_spaces": False,
        "chat_template": CHAT_TEMPLATE,
    }
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--out", help="train a tokenizer and write it here")
    what.add_argument("--adopt", help="rewrite DIR/tokenizer.json with Qwen2's pre-tokenizer (vocabulary unchanged)")
    p.add_argument("--vocab-size", type=int, default=2048)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.adopt:
        path = Path(args.adopt) / "tokenizer.json"
        adopt_qwen2_pretokenizer(Tokenizer.from_file(str(path))).save(str(path), pretty=True)
        print(f"rewrote {path} with Qwen2's pre-tokenizer")
        return
    tok = build(args.vocab_size, args.seed)
    save(tok, args.out)
    print(f"wrote {args.out}/tokenizer.json ({tok.get_vocab_size()} tokens)")


if __name__ == "__main__":
    main()
