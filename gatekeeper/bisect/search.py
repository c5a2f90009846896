"""The bisection itself, as `git bisect` does it, over an ordered list of builds.

The good build is assumed good and the bad one is tested first: a "bad" build the checks pass
means there is no bad build in the range (nothing to bisect). Then each step tests the untested
build nearest the middle of the range between the last known good and the first known bad, and
narrows. A build that cannot be judged (it does not start, or its evidence stays undecided) is
skipped, as `git bisect skip` does: the search goes on around it, and when only skipped builds
stand between the last good and the first bad, the answer is that range, not one build.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum


class Outcome(str, Enum):
    """What one build's step decided."""

    GOOD = "good"
    BAD = "bad"
    SKIP = "skip"


@dataclass(frozen=True)
class Answer:
    """Where the search ended. `first_bad`/`last_good` are indices into the builds (first_bad is
    None when the bad build passed: no bad build); `suspects` the builds the first bad one is
    among (one when found exactly; more when skipped builds stand in between)."""

    last_good: int
    first_bad: int | None
    suspects: tuple[int, ...]

    @property
    def exact(self) -> bool:
        """Whether the first bad build is known exactly."""
        return self.first_bad is not None and len(self.suspects) == 1


def budget(good: int, bad: int) -> int:
    """Launches the search needs without skips: the bad build's check, then ⌈log₂⌉ of the builds
    strictly between (each step halves them)."""
    inner = bad - good - 1
    return 1 + (math.ceil(math.log2(inner + 1)) if inner > 0 else 0)


class Search:
    """The state of a bisection between indices `good` < `bad` (outcomes are recorded with
    `record`, the next build to test comes from `next`, the answer from `answer` once `next` is None)."""

    def __init__(self, good: int, bad: int) -> None:
        if not good < bad:
            raise ValueError("the good build must come before the bad one")
        self.good, self.bad = good, bad
        self.outcomes: dict[int, Outcome] = {good: Outcome.GOOD}

    def record(self, build: int, outcome: Outcome) -> None:
        """One step's outcome for a build inside the range."""
        if not self.good <= build <= self.bad:
            raise ValueError(f"build {build} is outside the range {self.good}..{self.bad}")
        self.outcomes[build] = outcome

    def _bounds(self) -> tuple[int, int | None]:
        """(last known good, first known bad or None while the bad build is untested or passed)."""
        if self.outcomes.get(self.bad) is not Outcome.BAD:
            lo = max(i for i, o in self.outcomes.items() if o is Outcome.GOOD)
            return lo, None
        first_bad = min(i for i, o in self.outcomes.items() if o is Outcome.BAD)
        last_good = max(i for i, o in self.outcomes.items() if o is Outcome.GOOD and i < first_bad)
        return last_good, first_bad

    def next(self) -> int | None:
        """The build to test next, or None when the search is over."""
        outcome = self.outcomes.get(self.bad)
        if outcome is None:
            return self.bad
        if outcome is not Outcome.BAD:  # the bad build passed (or could not be judged): nothing to bisect
            return None
        lo, hi = self._bounds()
        assert hi is not None
        untested = [i for i in range(lo + 1, hi) if i not in self.outcomes]
        if not untested:
            return None
        middle = (lo + hi) / 2
        return min(untested, key=lambda i: (abs(i - middle), i))

    def answer(self) -> Answer:
        """What the outcomes say (meaningful once `next` is None)."""
        lo, hi = self._bounds()
        if hi is None:
            return Answer(lo, None, ())
        return Answer(lo, hi, tuple(range(lo + 1, hi + 1)))

    @property
    def unjudgeable_bad(self) -> bool:
        """Whether the bad build itself could not be judged (then nothing was found, and it says so)."""
        return self.outcomes.get(self.bad) is Outcome.SKIP
