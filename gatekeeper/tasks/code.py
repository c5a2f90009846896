"""Code: a small Python function from a template request; the answer parses with `ast`."""

from __future__ import annotations

import ast
import random

from gatekeeper.tasks.sample import Sample

BINARY = (("returns their sum", "{a} + {b}"), ("returns their product", "{a} * {b}"),
          ("returns {a} minus {b}", "{a} - {b}"), ("returns the larger of the two", "max({a}, {b})"),
          ("returns the smaller of the two", "min({a}, {b})"), ("returns True if they are equal", "{a} == {b}"))
UNARY = (("returns its square", "{a} * {a}"), ("returns it doubled", "{a} * 2"),
         ("returns its length", "len({a})"), ("returns it negated", "-{a}"),
         ("returns its absolute value", "abs({a})"))
VERBS = ("add", "compute", "get", "combine", "check", "calc", "make", "find")
NOUNS = ("total", "value", "result", "score", "size", "pair", "items", "count")
PARAMS = ("x", "y", "a", "b", "n", "m", "value", "count", "left", "right", "items", "width")


def generate(rng: random.Random) -> Sample:
    """A request for a one-line function; the answer is its exact source."""
    name = f"{rng.choice(VERBS)}_{rng.choice(NOUNS)}"
    if rng.random() < 0.6:
        a, b = rng.sample(PARAMS, 2)
        desc, expr = rng.choice(BINARY)
        params, takes = f"{a}, {b}", f"{a} and {b}"
    else:
        a = b = rng.choice(PARAMS)
        desc, expr = rng.choice(UNARY)
        params, takes = a, a
    prompt = (f"Write a Python function named {name} that takes {takes} and "
              f"{desc.format(a=a, b=b)}. Reply with the code only.")
    answer = f"def {name}({params}):\n    return {expr.format(a=a, b=b)}"
    return Sample(({"role": "user", "content": prompt},), None, answer, "code", {"name": name})


def _strip_fence(text: str) -> str:
    text = text.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rsplit("```", 1)[0]
    return text


def score(sample: Sample, output_text: str) -> bool:
    """Right when the reply parses and has the same syntax tree as the answer."""
    try:
        got = ast.dump(ast.parse(_strip_fence(output_text)))
    except (SyntaxError, ValueError):
        return False
    return got == ast.dump(ast.parse(sample.answer))
