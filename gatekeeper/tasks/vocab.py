"""Word lists and filler text shared by the task families."""

from __future__ import annotations

import random

NAMES = ("Alice", "Bob", "Carla", "Dmitri", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas",
         "Kenji", "Lena", "Mateo", "Nadia", "Oscar", "Priya", "Quinn", "Rosa", "Sven", "Tara",
         "Umar", "Vera", "Wen", "Yusuf", "Zoe", "Amara", "Bruno", "Chloe", "Diego", "Emil")
CITIES = ("Paris", "Berlin", "Tokyo", "Lima", "Cairo", "Oslo", "Madrid", "Toronto", "Sydney",
          "Nairobi", "Seoul", "Dublin", "Lisbon", "Prague", "Vienna", "Denver", "Austin",
          "Mumbai", "Hanoi", "Quito", "Riga", "Zurich", "Boston", "Kyoto", "Porto", "Milan")
COLORS = ("red", "blue", "green", "teal", "amber", "violet", "black", "white", "orange",
          "silver", "crimson", "indigo", "olive", "maroon", "coral", "beige")
ANIMALS = ("cat", "dog", "otter", "falcon", "tiger", "panda", "horse", "rabbit", "wolf",
           "eagle", "salmon", "gecko", "llama", "koala", "badger", "heron")
FOODS = ("pizza", "ramen", "tacos", "sushi", "pasta", "curry", "salad", "dumplings", "bagels",
         "paella", "falafel", "risotto")
NOUNS = ("river", "garden", "window", "engine", "letter", "mountain", "bridge", "market",
         "lantern", "harbor", "forest", "teacher", "painter", "station", "library", "kitchen",
         "village", "farmer", "sailor", "castle", "valley", "meadow", "candle", "basket")
ADJECTIVES = ("quiet", "old", "bright", "small", "busy", "green", "cold", "gentle", "heavy",
              "narrow", "distant", "warm", "tired", "careful", "empty", "golden")
VERBS = ("watched", "passed", "found", "crossed", "painted", "visited", "carried", "followed",
         "repaired", "described", "opened", "remembered", "cleaned", "noticed")
PLACES = ("the hill", "the shore", "the square", "the old road", "the station", "the harbor",
          "the edge of town", "the park", "the river bank", "the north gate")
TIMES = ("in the morning", "at noon", "after dinner", "before sunrise", "in winter",
         "on Sunday", "at night", "last spring", "every day", "once a year")
WORDS = NAMES + CITIES + COLORS + ANIMALS + FOODS + NOUNS + ADJECTIVES + VERBS
CYRILLIC = ("привет", "мир", "кошка", "собака", "дом", "вода", "солнце", "книга", "друг",
            "спасибо", "утро", "город")
CJK = ("你好", "世界", "猫", "狗", "水", "太阳", "书", "朋友", "谢谢", "こんにちは", "ありがとう",
       "ねこ", "いぬ", "みず", "ともだち", "東京", "日本語", "中文")
EMOJI = ("🙂", "🚀", "🎉", "🐱", "🌍", "🔥", "✅", "🍕", "❤️", "👍", "⭐", "🌧️")
PUNCT = ("!", "?", ".", ",", ";", ":", "-", "...", "!?", "#", "@", "%", "&", "*", "(", ")", "/")
LETTERS = "ABCDEFGHJKLMNPQRSTUVWXYZ"


def filler_sentence(rng: random.Random) -> str:
    """One grammatical, meaningless sentence for padding long contexts."""
    form = rng.randrange(4)
    a, b = rng.choice(NOUNS), rng.choice(NOUNS)
    if form == 0:
        return f"The {rng.choice(ADJECTIVES)} {a} {rng.choice(VERBS)} the {b} near {rng.choice(PLACES)}."
    if form == 1:
        return f"{rng.choice(NAMES)} {rng.choice(VERBS)} a {rng.choice(ADJECTIVES)} {a} {rng.choice(TIMES)}."
    if form == 2:
        return f"Nobody {rng.choice(VERBS)} the {a} {rng.choice(TIMES)}, so the {b} stayed {rng.choice(ADJECTIVES)}."
    return f"A {a} and a {b} were {rng.choice(ADJECTIVES)} by {rng.choice(PLACES)}."


def code_string(rng: random.Random) -> str:
    """A short random code such as `KX-4821` or `violet-otter-37`."""
    if rng.random() < 0.5:
        letters = "".join(rng.choice(LETTERS) for _ in range(rng.randint(2, 4)))
        return f"{letters}-{rng.randint(100, 9999)}"
    return f"{rng.choice(COLORS)}-{rng.choice(ANIMALS)}-{rng.randint(10, 99)}"
