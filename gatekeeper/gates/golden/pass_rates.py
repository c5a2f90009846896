"""Pass rates by family, for the golden gate's summary check `golden.pass_rate`.

A case counts as passed by an endpoint when that endpoint's answer passes every absolute
assertion (relative assertions have no meaning for the reference itself), so the two rates are
comparable. The summary fails when the candidate's overall rate falls below the reference's by
more than `max_pass_rate_drop` plus the reference's own noise (the share of cases whose pass/fail
differs between the reference's two runs); it is ERROR when no case could be judged. A case the
candidate lost to a precision flip (`near_tie_review.py`: it follows the reference's forced answer
but for near ties) counts as passed, up to `max_precision_flips`; beyond that the summary is
undecided (a precision change that frequent, or a small regression).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

from gatekeeper.detection import Items
from gatekeeper.evidence import Heatmap, Table
from gatekeeper.gates.interface import GateContext
from gatekeeper.results import Judgement, Status
from gatekeeper.gates.golden.checks import PASS_RATE, FamilyRates, PassRateFinding


@dataclass
class _Family:
    cases: int = 0
    candidate: int = 0
    reference: int = 0
    judged_candidate: int = 0
    judged_reference: int = 0
    flips: int = 0  # candidate failures that are precision flips
    statuses: dict[str, int] = field(default_factory=lambda: defaultdict(int))


@dataclass
class PassRates:
    """Accumulates per-case outcomes, then reports the summary check."""

    families: dict[str, _Family] = field(default_factory=dict)
    reference_flips: int = 0
    streams: dict[str, list[int]] = field(default_factory=dict)  # family -> [streamed answers equal to plain, judged]

    def add_stream(self, family: str, status: Status) -> None:
        """One `<case>.stream` check: whether the candidate's streamed answer equals its plain one
        (shown in the heatmap beside the families; not part of the pass rates)."""
        if status in (Status.PASS, Status.WARN, Status.FAIL):
            counts = self.streams.setdefault(family, [0, 0])
            counts[0] += status is not Status.FAIL
            counts[1] += 1

    def add(self, family: str, candidate_ok: bool | None, reference_ok: bool | None, status: Status,
            reference_flip: bool = False, precision_flip: bool = False) -> None:
        """One case: whether each endpoint passed its absolute assertions (None: no answer or not
        decided), whether the reference's two runs disagreed on that, and whether the candidate's
        failure is a precision flip."""
        self.reference_flips += reference_flip
        f = self.families.setdefault(family, _Family())
        f.cases += 1
        f.flips += precision_flip and candidate_ok is False
        f.statuses[status.value] += 1
        if candidate_ok is not None:
            f.judged_candidate += 1
            f.candidate += candidate_ok
        if reference_ok is not None:
            f.judged_reference += 1
            f.reference += reference_ok

    @property
    def precision_flips(self) -> int:
        """Cases the candidate lost to a precision flip."""
        return sum(f.flips for f in self.families.values())

    def finding(self, max_drop: float, max_flips: int = 0) -> PassRateFinding:
        """Overall and per-family rates and status counts, against the policy's `max_drop`; the
        precision flips count as passed when there are at most `max_flips`."""
        forgive = self.precision_flips <= max_flips
        fam = {name: FamilyRates(cases=f.cases, candidate_pass_rate=_rate(f.candidate + f.flips * forgive, f.judged_candidate),
                                 reference_pass_rate=_rate(f.reference, f.judged_reference), statuses=dict(f.statuses))
               for name, f in sorted(self.families.items())}
        tot = _Family()
        for f in self.families.values():
            tot.candidate += f.candidate + f.flips * forgive
            tot.reference += f.reference
            tot.judged_candidate += f.judged_candidate
            tot.judged_reference += f.judged_reference
            for k, v in f.statuses.items():
                tot.statuses[k] += v
        return PassRateFinding(pass_rate=_rate(tot.candidate, tot.judged_candidate),
                               reference_pass_rate=_rate(tot.reference, tot.judged_reference),
                               reference_noise=_rate(self.reference_flips, tot.judged_reference) or 0.0,
                               cases=sum(f.cases for f in self.families.values()), statuses=dict(tot.statuses), families=fam,
                               max_pass_rate_drop=max_drop, precision_flips=self.precision_flips or None)

    def table(self, max_flips: int = 0) -> Table:
        """Family × (cases, candidate pass rate, reference pass rate, PASS/WARN/FAIL/ERROR counts);
        the candidate's rate counts precision flips as passed when at most `max_flips`."""
        cols = ["family", "cases", "candidate pass rate", "reference pass rate", "PASS", "WARN", "FAIL", "ERROR"]
        rows = []
        for name, m in self.finding(0.0, max_flips).families.items():
            s = m.statuses
            rows.append([name, m.cases, _pct(m.candidate_pass_rate), _pct(m.reference_pass_rate),
                         s.get("PASS", 0), s.get("WARN", 0), s.get("FAIL", 0), s.get("ERROR", 0)])
        return Table("Pass rate by family", cols, rows)

    def heatmap(self) -> Heatmap:
        """The key chart: each family's pass rate, the reference's beside the candidate's (grey: none judged)."""
        rows, values, labels = [], [], []
        for name, f in sorted(self.families.items()):
            rows.append(name)
            values.append([f.reference / f.judged_reference if f.judged_reference else None,
                           f.candidate / f.judged_candidate if f.judged_candidate else None])
            labels.append([f"{f.reference}/{f.judged_reference}" if f.judged_reference else "not judged",
                           f"{f.candidate}/{f.judged_candidate}" if f.judged_candidate else "not judged"])
            if name in self.streams:  # its streamed variants, right below: the candidate against itself
                same, judged = self.streams[name]
                rows.append(f"{name} · streamed")
                values.append([None, same / judged])
                labels.append(["–", f"{same}/{judged}"])
        streamed = "; '· streamed': the candidate's streamed answer equals its plain one" if self.streams else ""
        return Heatmap(f"cases passed by family: reference, candidate (green all, red none){streamed}", rows,
                       ["reference", "candidate"], values, labels, is_key=True)

    def report(self, ctx: GateContext, max_drop: float, max_flips: int, started: float | None = None) -> None:
        """Record `golden.pass_rate` on the gate context, timed from `started` (the gate's start:
        the summary is decided by every case, so its time is theirs, not its own arithmetic's)."""
        found = self.finding(max_drop, max_flips)
        cand, ref = found.pass_rate, found.reference_pass_rate
        if cand is None:
            ctx.check(PASS_RATE, Status.ERROR, "no case could be judged", found, [self.table(max_flips), self.heatmap()], started=started)
            return
        if ref is None or ref == 0:  # nothing the candidate could fall below
            ctx.check(PASS_RATE, Status.WARN, f"undecided: the candidate passes {_pct(cand)} of cases, but the reference "
                      + ("has no judged case" if ref is None else "passes none") + ": no pass rate to compare with",
                      found, [self.table(max_flips), self.heatmap()], judgement=Judgement.TOLERANCE, undecided=True, started=started)
            return
        allowed = max_drop + found.reference_noise
        flips = self.precision_flips
        if flips > max_flips:
            ctx.check(PASS_RATE, Status.WARN, f"undecided: the candidate lost {flips} case(s) the reference passes to precision "
                      f"flips (it follows the reference's answer when forced, but for near ties), more than "
                      f"max_precision_flips={max_flips} forgives: a precision change this frequent, or a small regression; "
                      f"counting them as lost, it passes {_pct(cand)} of cases, the reference {_pct(ref)}",
                      found, [self.table(max_flips), self.heatmap()], judgement=Judgement.TOLERANCE, undecided=True, started=started)
            return
        counted = f" ({flips} case(s) lost to a precision flip counted as passed)" if flips else ""
        if cand < ref - allowed - 1e-9:
            status, why = Status.FAIL, (f"candidate passes {_pct(cand)} of cases, the reference {_pct(ref)} "
                                        f"(allowed drop {_pct(max_drop)} + reference noise {_pct(found.reference_noise)})"
                                        f"{counted}")
        else:
            why = f"candidate passes {_pct(cand)} of cases, the reference {_pct(ref)}{counted}"
            status = Status.PASS
        ctx.check(PASS_RATE, status, why, found, [self.table(max_flips), self.heatmap()], judgement=Judgement.TOLERANCE,
                  judged=self._items(allowed), started=started)

    def _items(self, allowed: float) -> Items:
        """What the summary judged: the cases the reference passes, a fault failing them on the
        candidate caught once the lost ones exceed the allowed share of its judged cases."""
        passed = sum(f.reference for f in self.families.values())
        judged = sum(f.judged_candidate for f in self.families.values())
        return Items(passed, "the golden cases the reference passes failing on the candidate",
                     math.floor(allowed * judged + 1e-9) + 1)


def _rate(n: int, d: int) -> float | None:
    return round(n / d, 4) if d else None


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"
