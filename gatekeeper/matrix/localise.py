"""Which execution path fails: the smallest condition on a matrix's axes that separates the failing
cells from the passing ones, said in the terms of docs/bug-classes.md#fused-norm-matrix.

The fused-norm bug failed at TP=4 only; TP=1 was fine, and turning the fusion off
recovered. Given each cell's axis values and whether it failed, `localise` searches conjunctions
of literals — `axis=value`, `axis≠value`, and for numeric axes `axis>v` / `axis<v` at the
thresholds between the values present — smallest first (up to three literals), for one that holds
on every failing cell and on no passing cell. Among equally small ones it prefers equalities and
thresholds over exclusions, then the order of the axes. Each literal of the answer is then
contrasted: the cells that meet every other literal but not this one, and how they fared
("tp=1 passes", "fused_norm=off passes") — the evidence that the literal matters.

When no conjunction separates exactly (a flaky cell, two bugs), the closest one is given with the
cells it misclassifies. Cells that could not be judged (HOLD, ERROR) are left out and named.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

MAX_LITERALS = 3


@dataclass(frozen=True)
class Literal:
    """One condition on one axis: op is "=", "≠", ">" or "<"."""

    axis: str
    op: str
    value: object

    def holds(self, cell: Mapping[str, object]) -> bool:
        """Whether `cell` meets the condition."""
        v = cell.get(self.axis)
        if self.op == "=":
            return _same(v, self.value)
        if self.op == "≠":
            return not _same(v, self.value)
        number = _number(v)
        if number is None:
            return False
        return number > float(self.value) if self.op == ">" else number < float(self.value)  # type: ignore[arg-type]

    def negated(self) -> str:
        """The literal's opposite, as a reader would say it ("tp=1", "fused_norm=off")."""
        return f"{self.axis}{ {'=': '≠', '≠': '=', '>': '≤', '<': '≥'}[self.op] }{_show(self.value)}".replace(" ", "")

    def __str__(self) -> str:
        return f"{self.axis}{self.op}{_show(self.value)}"


@dataclass(frozen=True)
class Localisation:
    """The separating condition (empty when nothing failed or nothing passed) and its evidence."""

    literals: tuple[Literal, ...]
    exact: bool
    misclassified: tuple[str, ...]  # cell ids the condition gets wrong (when not exact)
    contrasts: tuple[str, ...]  # per literal: what the cells without it did
    unjudged: tuple[str, ...]
    failing: int
    passing: int

    def sentence(self) -> str:
        """One line for a report, e.g. "fails when dtype=bfloat16 and tp>1 and fused_norm=on;
        tp=1 passes; fused_norm=off passes"."""
        if not self.failing:
            return "no cell failed"
        if not self.literals:
            return "every judged cell failed: nothing on the matrix's axes separates them" if not self.passing else \
                "no condition on the axes separates the failing cells"
        head = f"fails when {' and '.join(str(lit) for lit in self.literals)}"
        if not self.exact:
            head += f" (closest condition; it misclassifies {', '.join(self.misclassified)})"
        parts = [head, *self.contrasts]
        if self.unjudged:
            parts.append(f"not judged: {', '.join(self.unjudged)}")
        return "; ".join(parts)


def _same(a: object, b: object) -> bool:
    return str(a).lower() == str(b).lower()


def _number(v: object) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int | float):
        return float(v)
    try:
        return float(str(v))
    except ValueError:
        return None


def _show(v: object) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _literals(cells: Sequence[Mapping[str, object]], axes: Sequence[str]) -> list[Literal]:
    out: list[Literal] = []
    for axis in axes:
        values: list[object] = []
        for c in cells:
            if axis in c and not any(_same(c[axis], v) for v in values):
                values.append(c[axis])
        if len(values) < 2:
            continue
        numbers = sorted({n for v in values if (n := _number(v)) is not None})
        if len(numbers) == len(values):
            for lo, hi in zip(numbers, numbers[1:]):
                out += [Literal(axis, ">", lo), Literal(axis, "<", hi)]
        out += [Literal(axis, "=", v) for v in values]
        if len(values) > 2:
            out += [Literal(axis, "≠", v) for v in values]
    return out


def _rank(lit: Literal, numeric: set[str]) -> int:
    """Thresholds read best on numeric axes ("tp>1"), equalities elsewhere, exclusions last."""
    if lit.op == "≠":
        return 2
    return (lit.op == "=") if lit.axis in numeric else (lit.op != "=")


def _cost(lits: tuple[Literal, ...], order: dict[str, int], numeric: set[str]) -> tuple[int, int, list[int]]:
    return len(lits), sum(_rank(lit, numeric) for lit in lits), sorted(order[lit.axis] for lit in lits)


def localise(cells: Mapping[str, Mapping[str, object]], failed: Mapping[str, bool | None],
             axes: Sequence[str] | None = None) -> Localisation:
    """`cells`: id → axis values; `failed`: id → True (failed), False (passed), None (not judged)."""
    judged = [cid for cid in cells if failed.get(cid) is not None]
    unjudged = tuple(cid for cid in cells if failed.get(cid) is None)
    bad = [cid for cid in judged if failed[cid]]
    good = [cid for cid in judged if not failed[cid]]
    axes = list(axes) if axes is not None else list(dict.fromkeys(a for c in cells.values() for a in c))
    order = {a: i for i, a in enumerate(axes)}
    if not bad or not good:
        return Localisation((), bool(bad) or not good, (), (), unjudged, len(bad), len(good))
    pool = _literals([cells[c] for c in judged], axes)
    numeric = {lit.axis for lit in pool if lit.op in (">", "<")}
    best: tuple[tuple[Literal, ...], int] | None = None
    for size in range(1, MAX_LITERALS + 1):
        exact = []
        for combo in itertools.combinations(pool, size):
            if len({lit.axis for lit in combo}) < size:
                continue  # two conditions on one axis: a threshold pair or a contradiction, not simpler
            wrong = [c for c in judged if all(lit.holds(cells[c]) for lit in combo) != bool(failed[c])]
            if not wrong:
                exact.append(combo)
            elif best is None or len(wrong) < best[1]:
                best = (combo, len(wrong))
        if exact:
            chosen = min(exact, key=lambda combo: _cost(combo, order, numeric))
            return Localisation(chosen, True, (), _contrasts(chosen, cells, failed, judged), unjudged, len(bad), len(good))
    assert best is not None
    combo = best[0]
    misses = tuple(c for c in judged if all(lit.holds(cells[c]) for lit in combo) != bool(failed[c]))
    return Localisation(combo, False, misses, _contrasts(combo, cells, failed, judged), unjudged, len(bad), len(good))


def _contrasts(combo: tuple[Literal, ...], cells: Mapping[str, Mapping[str, object]], failed: Mapping[str, bool | None],
               judged: Sequence[str]) -> tuple[str, ...]:
    out = []
    for lit in combo:
        others = [o for o in combo if o is not lit]
        near = [c for c in judged if all(o.holds(cells[c]) for o in others) and not lit.holds(cells[c])]
        if not near:
            continue
        passed = sum(1 for c in near if not failed[c])
        verdict = "passes" if passed == len(near) else "fails" if passed == 0 else f"passes in {passed} of {len(near)} cells"
        seen = {str(cells[c].get(lit.axis)) for c in near}
        said = f"{lit.axis}={seen.pop()}" if len(seen) == 1 else lit.negated()
        out.append(f"{said} {verdict}")
    return tuple(out)
