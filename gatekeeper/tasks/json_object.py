"""Structured JSON: an object built from key/value facts in the prompt, optionally to a schema.

The answer is compact one-line JSON (`json.dumps` defaults) with keys in the schema's order when a
schema is given, else in the order the facts were stated.
"""

from __future__ import annotations

import json
import random
from typing import Any, Callable

from gatekeeper.tasks import vocab
from gatekeeper.tasks.sample import Sample

_FIELDS: dict[str, tuple[str, Callable[[random.Random], Any]]] = {
    "name": ("string", lambda r: r.choice(vocab.NAMES)),
    "city": ("string", lambda r: r.choice(vocab.CITIES)),
    "color": ("string", lambda r: r.choice(vocab.COLORS)),
    "pet": ("string", lambda r: r.choice(vocab.ANIMALS)),
    "food": ("string", lambda r: r.choice(vocab.FOODS)),
    "code": ("string", vocab.code_string),
    "age": ("integer", lambda r: r.randint(1, 99)),
    "year": ("integer", lambda r: r.randint(1900, 2030)),
    "count": ("integer", lambda r: r.randint(0, 500)),
    "price": ("number", lambda r: round(r.randint(1, 99999) / 100, 2)),
    "height": ("number", lambda r: round(r.randint(100, 220) / 100, 2)),
    "active": ("boolean", lambda r: r.random() < 0.5),
    "verified": ("boolean", lambda r: r.random() < 0.5),
}


def _say(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def generate(rng: random.Random, num_fields: int | None = None, schema: bool | None = None) -> Sample:
    """Facts of 1-5 fields (or `num_fields`); `schema` forces a stated schema on or off."""
    keys = rng.sample(sorted(_FIELDS), num_fields or rng.randint(1, 5))
    values = {k: _FIELDS[k][1](rng) for k in keys}
    facts = ", ".join(f"{k} is {_say(values[k])}" for k in keys)
    use_schema = rng.random() < 0.4 if schema is None else schema
    order = list(keys)
    if use_schema:
        rng.shuffle(order)
        spec = {"type": "object", "properties": {k: {"type": _FIELDS[k][0]} for k in order},
                "required": order}
        prompt = (f"Facts: {facts}.\nReturn a JSON object with these facts that follows this JSON "
                  f"schema: {json.dumps(spec)}")
    else:
        prompt = f"Facts: {facts}.\nReturn these facts as a JSON object."
    answer = json.dumps({k: values[k] for k in order}, ensure_ascii=False)
    return Sample(({"role": "user", "content": prompt},), None, answer, "json",
                  {"schema": use_schema, "num_fields": len(keys)})


def score(sample: Sample, output_text: str) -> bool:
    """Right when the reply parses as JSON equal to the answer (types included)."""
    try:
        got = json.loads(output_text.strip())
    except ValueError:
        return False
    want = json.loads(sample.answer)
    return got == want and all(type(got[k]) is type(want[k]) for k in want)
