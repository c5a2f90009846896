"""What a PASS would have caught: its detection limit.

A PASS says "no regression found"; on its own that says nothing about how large a regression it
could have missed. Every blocking PASS carries a `DetectionLimit`: the smallest effect on its
measure that the check, as run, would have caught with probability `power` (95%), stated in the
measure's own unit, beside the policy's materiality for that measure where the policy names one.

- **Count checks** (`items`): a check that fails once `fail_at` of its `n` judged items go wrong
  (EXACT checks: any one) catches a fault hitting a share p of items independently with
  probability P(X ≥ fail_at), X ~ Binomial(n, p). Its limit is the p where that is 95%: the
  0.95 quantile of Beta(fail_at, n − fail_at + 1) (`scipy.stats.beta`; for fail_at = 1 it is
  1 − 0.05^(1/n): 30 judged items catch a fault hitting ≥ 9.5% of them). Zero judged items have no
  limit: the check judged nothing (undecided, `gates/interface.py`).
- **Items judged exactly** (a golden case, a canary, a stated path, each probed feature): any
  difference on them is caught (`exact`): a deterministic observation, not a sample of a rate.
- **Tolerance checks** (gate 2's drift figures, over the positions and prompts scored): a figure
  beyond its tolerance is caught exactly; the limit is that tolerance (the policy's, or the
  reference's own noise floor where that is wider) (`tolerance`). Where the figure is the worst or
  a percentile of positions, the limit is stated as a share of positions instead (`items_limit`).
- **Tests over sessions** (gate 4's decay and recall) state the effect their test reaches with 95%
  power in a fresh run, at an upper confidence bound of the sessions' spread (a t approximation of
  the sign-flip test, checked by simulation: `gates/longctx/decay.py`, `detectable`).
- **Interval checks** state what they rule out: the worst end of their one-sided bound (the
  performance gate's budgets: "rules out more than 3.1% worse").
- **Gate 5's pair rules** state the anytime 95% upper bound of the candidate's excess over the
  reference's twin (`traffic/excess_bound.py`): "rules out more than +0.9 points of failed
  requests over the reference's twin".
- **Designed tests** state their design's limit (the performance gate's sequential test: the
  materiality, at its power).

A limit wider than the materiality means the PASS could not have caught what the policy calls a
regression: such a check is undecided, not a PASS.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

POWER = 0.95  # the probability a stated limit is caught with


@dataclass(frozen=True)
class DetectionLimit:
    """The smallest effect on `measure` (in `unit`: "share" of items, "regression" (a fraction
    slower), "bound" (an interval's worst end: what a PASS rules out), "excess" (an anytime upper
    bound on the candidate's excess rate over the reference's twin, gate 5), "any" (items judged
    exactly: any difference), "tolerance" (a figure beyond `effect`, caught exactly: `measure`
    ends with its comparison, "max |Δ logprob| above"), or a named unit) this check would
    have caught with probability `power`; `materiality`: the policy's margin for the measure, when
    it names one; `judged`: the items it rests on (0 for a designed test)."""

    effect: float
    measure: str
    unit: str = "share"
    power: float = POWER
    materiality: float | None = None
    judged: int = 0

    @property
    def within_materiality(self) -> bool:
        """Whether the check could catch the regression the policy calls material (True without one)."""
        return self.materiality is None or self.effect <= self.materiality + 1e-12

    def text(self) -> str:
        """One phrase: "would catch ≥ 9.5% of golden answers differing (95% power, 30 judged)", "would
        catch a 5.0% regression of request seconds per output token (95% power)"."""
        tail = f"{self.power:.0%} power" + (f", {self.judged} judged" if self.judged else "")
        if self.materiality is not None:
            tail += f"; materiality {self._size(self.materiality)}"
        if self.unit == "share":
            return f"would catch ≥ {self._size(self.effect)} of {self.measure} ({tail})"
        if self.unit == "any":
            return f"would catch any {self.measure} (exact" + (f", {self.judged} judged)" if self.judged > 1 else ")")
        if self.unit == "tolerance":
            return f"would catch {self.measure} {self.effect:.3g} (its tolerance; exact over {self.judged} judged)"
        if self.unit == "regression":
            return f"would catch a {self._size(self.effect)} regression of {self.measure} ({tail})"
        if self.unit == "bound":
            return f"rules out more than {self._size(self.effect)} worse in {self.measure} ({self.power:.0%} one-sided bound)"
        if self.unit == "excess":
            tail = f"{self.power:.0%} anytime bound" + (f", {self.judged} judged" if self.judged else "")
            if self.materiality is not None:
                tail += f"; materiality {self._size(self.materiality)}"
            return f"rules out more than +{self._size(self.effect)} of {self.measure} over the reference's twin ({tail})"
        return f"would catch {self._size(self.effect)} of {self.measure} ({tail})"

    def _size(self, value: float) -> str:
        if self.unit == "excess":
            return f"{value * 100:.1f} points"
        return f"{value:.1%}" if self.unit in ("share", "regression", "bound") else f"{value:.3g} {self.unit}"


@dataclass(frozen=True)
class Items:
    """What a count check judged: `n` items, the `measure` a fault would move (in words: "golden
    answers differing from the reference's"), failing once `fail_at` of them go wrong; `materiality`:
    the policy's margin for the measure, when it names one; `reference_fails_all`: every item went
    unjudged because the reference fails it too (the model cannot do the task here)."""

    n: int
    measure: str
    fail_at: int = 1
    materiality: float | None = None
    reference_fails_all: bool = False  # every item went unjudged because the reference fails it too

    @property
    def not_applicable(self) -> bool:
        """Nothing judged because the reference cannot do the task on any item: the model, not the
        evidence, leaves the question open — nothing could regress from the reference."""
        return self.n == 0 and self.reference_fails_all

    def limit(self) -> DetectionLimit | None:
        """Its detection limit (None: nothing judged)."""
        return items_limit(self.n, self.measure, self.fail_at, self.materiality)


def exact(measure: str, judged: int = 1) -> DetectionLimit:
    """The limit of a check on `judged` items judged exactly (one golden case, the canary, every
    probed feature): any `measure` ("difference from the reference's answer") is caught."""
    return DetectionLimit(0.0, measure, "any", 1.0, None, max(1, judged))


def tolerance(value: float, measure: str, judged: int) -> DetectionLimit:
    """The limit of a check that fails once a figure computed exactly over `judged` items passes
    `value`: `measure` names the figure and its direction ("mean |Δ logprob| above")."""
    return DetectionLimit(max(0.0, value), measure, "tolerance", 1.0, None, judged)


def items_limit(judged: int, measure: str, fail_at: int = 1, materiality: float | None = None) -> DetectionLimit | None:
    """The limit of a check that fails once `fail_at` of `judged` independent items go wrong;
    None when nothing was judged (no limit: the check decided nothing)."""
    if judged <= 0:
        return None
    from scipy import stats  # at judging time only (scipy's import costs a plan 0.4 s)

    fail_at = max(1, min(fail_at, judged))
    effect = float(stats.beta.ppf(POWER, fail_at, judged - fail_at + 1))
    return DetectionLimit(effect, measure, "share", POWER, materiality, judged)


@functools.lru_cache(maxsize=4096)
def fisher_limit(n: int, base_failed: int, base_n: int, alpha: float, measure: str) -> DetectionLimit | None:
    """The limit of a check that fails when a one-sided Fisher exact test finds the candidate's
    share of `n` items failing above the baseline's `base_failed` of `base_n` at `alpha`: the
    share reaching, with 95% probability, the fewest failures the test calls beyond chance (None
    when no count of them would: too few items). Memoised: a pure function of its arguments that
    scans counts with a test each, asked the same question by every check of a kind."""
    from scipy.stats import fisher_exact

    for k in range(1, n + 1):
        if k * base_n > base_failed * n and fisher_exact([[k, n - k], [base_failed, base_n - base_failed]],
                                                         alternative="greater")[1] < alpha:
            return items_limit(n, measure, k)
    return None


@dataclass(frozen=True)
class Ruling:
    """A PASS or WARN the evidence cannot carry, made undecided: its new reason, and whether it
    is advisory (the reference fails every item too)."""

    reason: str
    advisory: bool = False


def rule(passed: bool, reason: str, judged: Items | None, limit: DetectionLimit | None, decide: str = "") -> Ruling | None:
    """What `ctx.check` makes of a PASS (`passed`) or WARN: undecided when nothing was judged
    (advisory when the reference fails every item too: the model, not the candidate), when a PASS's
    judged items are fewer than the failures that would fail it (it could never have fired), or when a
    PASS's limit is wider than its materiality (saying first what would `decide` it, when known);
    None when it stands."""
    if judged is not None and judged.not_applicable:
        return Ruling(f"not judged: the reference fails every item too, so none could regress from it ({reason})", True)
    if judged is not None and judged.n == 0:
        return Ruling(f"undecided: nothing judged ({reason})")
    if passed and judged is not None and judged.fail_at > judged.n:
        return Ruling(f"undecided: {judged.n} judged could never reach the {judged.fail_at} of {judged.measure} that "
                      f"would fail it ({reason})")
    if passed and limit is not None and not limit.within_materiality:
        return Ruling(f"undecided: {decide + ' — ' if decide else ''}{limit.text()}, wider than the materiality ({reason})")
    return None
