"""Synthetic task families for gk-tiny: training data, evaluation prompts and golden cases.

Every family is one module exposing `generate(rng, **kw) -> Sample` and
`score(sample, output_text) -> bool`. A sample is correct by construction: `answer` is the exact
assistant text the model should produce (tool calls already rendered in the Hermes/Qwen
`<tool_call>{...}</tool_call>` form), so the same object serves training (prompt + answer) and
evaluation (prompt -> compare). Generation draws only from the `random.Random` it is given, so a
seed reproduces a sample exactly.

    >>> import random
    >>> from gatekeeper import tasks
    >>> s = tasks.generate("echo", random.Random(0))
    >>> tasks.score(s, s.answer)
    True
"""

from __future__ import annotations

import random
from types import ModuleType

from gatekeeper.tasks import (
    arithmetic,
    code,
    echo,
    eos,
    json_object,
    long_output,
    multi_turn,
    multilingual,
    needle,
    refusal,
    tool_call,
)
from gatekeeper.tasks.sample import Sample

_FAMILIES: dict[str, ModuleType] = {
    "echo": echo,
    "arithmetic": arithmetic,
    "json": json_object,
    "tool_call": tool_call,
    "needle": needle,
    "multi_turn": multi_turn,
    "long_output": long_output,
    "code": code,
    "multilingual": multilingual,
    "refusal": refusal,
    "eos": eos,
}

FAMILIES: tuple[str, ...] = tuple(_FAMILIES)
"""Names of every task family, in a stable order."""


class UnknownFamilyError(KeyError):
    """Raised for a family name that is not registered."""


def _module(family: str) -> ModuleType:
    try:
        return _FAMILIES[family]
    except KeyError:
        raise UnknownFamilyError(f"unknown task family {family!r}; known: {', '.join(FAMILIES)}") from None


def generate(family: str, rng: random.Random, **kw) -> Sample:
    """Draw one sample of `family` from `rng`; keyword arguments are family-specific knobs."""
    return _module(family).generate(rng, **kw)


def score(sample: Sample, output_text: str) -> bool:
    """True when `output_text` (the assistant's reply, special tokens stripped) is right."""
    return bool(_module(sample.family).score(sample, output_text))


__all__ = ["FAMILIES", "Sample", "UnknownFamilyError", "generate", "score"]
