"""The bisect loop: take the next build from the search, judge it, log it, until the search ends."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gatekeeper.bisect import log
from gatekeeper.bisect.search import Answer, Search, budget
from gatekeeper.bisect.step import Setup, StepResult, judge_build


@dataclass(frozen=True, kw_only=True)
class BisectResult:
    """The builds, the range searched, every step in the order run, and the answer."""

    builds: tuple[str, ...]
    good: int
    bad: int
    steps: tuple[StepResult, ...]
    answer: Answer
    budget: int
    checks: tuple[str, ...]
    template: str

    @property
    def decided(self) -> bool:
        """Found exactly, or no bad build (the bad build passes); else undecided."""
        return (self.answer.first_bad is None and not self.bad_skipped) or self.answer.exact

    @property
    def bad_skipped(self) -> bool:
        """The bad build itself could not be judged."""
        return any(s.build == self.builds[self.bad] and s.outcome.value == "skip" for s in self.steps)


def bisect(setup: Setup, builds: list[str], good: int, bad: int, out: Path, seed: int, resume: bool,
           progress: Callable[[str], None]) -> BisectResult:
    """Search `builds[good..bad]` for the first build the setup's checks call bad."""
    done = log.start(out, log.header(builds, good, bad, setup.template, setup.checks), resume)
    search = Search(good, bad)
    index = {b: i for i, b in enumerate(builds)}
    for step in done:
        search.record(index[step.build], step.outcome)
    steps = list(done)
    limit = budget(good, bad)
    progress(f"bisecting {bad - good + 1} builds from {builds[good]} (good) to {builds[bad]} (bad) on "
             f"{', '.join(setup.checks)}: at most {limit} builds judged, one more per skipped build"
             + (f"; {len(done)} judged already (resumed)" if done else ""))
    while (i := search.next()) is not None:
        progress(f"step {len(steps) + 1}: judging {builds[i]}")
        step = judge_build(setup, builds[i], out / "steps" / f"{i:03d}", seed, progress)
        log.append(out, step)
        steps.append(step)
        search.record(i, step.outcome)
        progress(f"{builds[i]}: {step.outcome.value} ({step.why[:160]})")
    return BisectResult(builds=tuple(builds), good=good, bad=bad, steps=tuple(steps), answer=search.answer(), budget=limit,
                        checks=setup.checks, template=setup.template)
