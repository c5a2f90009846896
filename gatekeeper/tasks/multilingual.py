"""Multilingual: echo in Chinese, Japanese, Russian and emoji, and a tiny fixed dictionary."""

from __future__ import annotations

import random

from gatekeeper.tasks import vocab
from gatekeeper.tasks.sample import Sample, exact

DICTIONARY: dict[str, dict[str, str]] = {
    "cat": {"Chinese": "猫", "Japanese": "猫", "Russian": "кошка"},
    "dog": {"Chinese": "狗", "Japanese": "犬", "Russian": "собака"},
    "water": {"Chinese": "水", "Japanese": "水", "Russian": "вода"},
    "sun": {"Chinese": "太阳", "Japanese": "太陽", "Russian": "солнце"},
    "book": {"Chinese": "书", "Japanese": "本", "Russian": "книга"},
    "friend": {"Chinese": "朋友", "Japanese": "友達", "Russian": "друг"},
    "hello": {"Chinese": "你好", "Japanese": "こんにちは", "Russian": "привет"},
    "thank you": {"Chinese": "谢谢", "Japanese": "ありがとう", "Russian": "спасибо"},
    "house": {"Chinese": "房子", "Japanese": "家", "Russian": "дом"},
    "city": {"Chinese": "城市", "Japanese": "都市", "Russian": "город"},
    "morning": {"Chinese": "早上", "Japanese": "朝", "Russian": "утро"},
    "world": {"Chinese": "世界", "Japanese": "世界", "Russian": "мир"},
}
LANGUAGES = ("Chinese", "Japanese", "Russian")
SCRIPTS = {"Chinese": vocab.CJK[:9], "Japanese": vocab.CJK[9:], "Russian": vocab.CYRILLIC, "emoji": vocab.EMOJI}


def generate(rng: random.Random, mode: str | None = None) -> Sample:
    """`mode` is 'echo' or 'translate' (random when None)."""
    mode = mode or rng.choice(("echo", "translate"))
    if mode == "translate":
        word = rng.choice(sorted(DICTIONARY))
        lang = rng.choice(LANGUAGES)
        prompt = f"Translate \"{word}\" into {lang}. Reply with the translation only."
        answer = DICTIONARY[word][lang]
    else:
        lang = rng.choice(sorted(SCRIPTS))
        pool = SCRIPTS[lang]
        sep = "" if lang in ("Chinese", "Japanese") and rng.random() < 0.5 else " "
        answer = sep.join(rng.choice(pool) for _ in range(rng.randint(1, 5)))
        prompt = f"Reply with exactly: {answer}"
    return Sample(({"role": "user", "content": prompt},), None, answer, "multilingual",
                  {"mode": mode, "language": lang})


score = exact
