"""The noise floor, measured one way by every gate that compares answers.

LLM serving is not bitwise deterministic: batch composition and kernel order change results.
So before the candidate is held to the reference, the reference is asked the same items a second
time, at another concurrency (`noise_floor_concurrency`, the one setting name in every policy
section) and in the reverse order, so that the batches differ; what it does not repeat is noise,
never a regression. A second pass at concurrency 0 means "not measured" (gate 4 allows it and
notes it; gates 2 and 3 require the pass).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from gatekeeper.errors import EndpointError
from gatekeeper.endpoints.fanout import fan_out

T = TypeVar("T")
A = TypeVar("A")


@dataclass(frozen=True)
class Passes(Generic[A]):
    """The reference's answers: `first` at the gate's concurrency, `second` (None when the noise
    floor was not measured) at `noise_floor_concurrency`, reverse order, both in item order."""

    first: list[A | EndpointError]
    second: list[A | EndpointError] | None

    @property
    def measured(self) -> bool:
        """Whether there is a second pass to measure the noise floor with."""
        return self.second is not None

    def unrepeated(self, same: Callable[[A | EndpointError, A | EndpointError], bool]) -> list[bool]:
        """Per item: whether the reference did not repeat itself — the second pass failed or
        answered differently by `same` (all False when the noise floor was not measured)."""
        if self.second is None:
            return [False] * len(self.first)
        return [isinstance(b, EndpointError) or not same(a, b) for a, b in zip(self.first, self.second)]


def ask_twice(ask: Callable[[T], A], items: Sequence[T], concurrency: int, noise_floor_concurrency: int) -> Passes[A]:
    """Ask every item at `concurrency`, then again at `noise_floor_concurrency` in the reverse
    order (skipped when that is 0). EndpointErrors are answers, as in `fan_out`."""
    first = fan_out(ask, items, concurrency)
    if noise_floor_concurrency <= 0:
        return Passes(first, None)
    second = fan_out(ask, list(reversed(items)), noise_floor_concurrency)
    return Passes(first, list(reversed(second)))


def describe(what: str, unrepeated: int, total: int, concurrency: int, noise_floor_concurrency: int) -> str:
    """The noise floor in one sentence for a gate's notes, e.g. "golden answers: noise floor:
    reference deterministic, 0 of 54 answers changed across two passes (concurrency 4, then 1 in
    reverse order)"."""
    if noise_floor_concurrency <= 0:
        return f"{what}: noise floor not measured (noise_floor_concurrency: 0)"
    state = "reference deterministic" if unrepeated == 0 else "reference nondeterministic"
    return (f"{what}: noise floor: {state}, {unrepeated} of {total} answers changed across two passes "
            f"(concurrency {concurrency}, then {noise_floor_concurrency} in reverse order)")
