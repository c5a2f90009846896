"""Train gk-tiny's byte-level BPE tokenizer on the synthetic task corpus.

Pre-tokenization splits text into letter runs, single digits, punctuation runs and whitespace
runs, each its own piece; the byte-level step then maps bytes to the GPT-2 alphabet without its own
regex. Unlike GPT-2/Qwen2, a word never carries its leading space, so `Paris` in a prompt and
`Paris` at the start of an answer are the same tokens (copying was measurably better that way),
and single digits make numbers copy and add digit by digit. The file is a plain `tokenizers`
Split + ByteLevel pipeline, which Hugging Face's PreTrainedTokenizerFast loads as is.

    python -m gatekeeper.training.tokenizer_train --out DIR [--vocab-size 2048] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Iterator

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

from gatekeeper import tasks
from gatekeeper.engine.chat_template import CHAT_TEMPLATE, SPECIAL_TOKENS
from gatekeeper.engine.tokenizer import Tokenizer as ChatTokenizer

SPLIT_PATTERN = r"\p{L}+|\p{N}|[^\s\p{L}\p{N}]+|\s+"
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
        pre_tokenizers.Split(Regex(SPLIT_PATTERN), behavior="isolated"),
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
    return tok


def save(tok: Tokenizer, out_dir: str | Path) -> None:
    """Write tokenizer.json and tokenizer_config.json (with the chat template)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok.save(str(out / "tokenizer.json"))
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
    p.add_argument("--out", required=True)
    p.add_argument("--vocab-size", type=int, default=2048)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    tok = build(args.vocab_size, args.seed)
    save(tok, args.out)
    print(f"wrote {args.out}/tokenizer.json ({tok.get_vocab_size()} tokens)")


if __name__ == "__main__":
    main()
