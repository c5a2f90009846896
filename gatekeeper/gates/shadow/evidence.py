"""Gate 5's evidence: the pairs least like the reference's answers, and the slices' table."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Sequence

from gatekeeper.evidence import Table, TextPair
from gatekeeper.traffic.analysis import SliceResult
from gatekeeper.text import first_divergence
from gatekeeper.traffic.measures import Measures, Pair, render_pair

WORST_PAIRS = 5
_ORDER = itertools.count()


def keep_worst(heap: list[tuple[float, int, Pair, Measures]], pair: Pair, m: Measures) -> None:
    """Keep the WORST_PAIRS pairs least similar to the reference: a max-heap on similarity
    (stored negated), whose top is the most similar pair kept."""
    if not m.judged or m.similarity >= 1.0:
        return
    item = (-m.similarity, next(_ORDER), pair, m)
    if len(heap) < WORST_PAIRS:
        heapq.heappush(heap, item)
    elif -heap[0][0] > m.similarity:
        heapq.heapreplace(heap, item)


def pair_evidence(pair: Pair, m: Measures) -> TextPair:
    """A pair's answers side by side, headed by its similarity to the reference's (and the twin's);
    parallel calls in one order on both sides (`render_pair`), the first divergence found in what is shown."""
    ref_text, cand_text = render_pair(pair.reference, pair.candidate)
    return TextPair(f"{pair.id} ({pair.tenant}, {pair.kind}): similarity {m.similarity:.2f} (twin {m.twin_similarity:.2f})",
                    ref_text, cand_text, first_divergence(ref_text, cand_text), None)


def _score(sl: SliceResult) -> str:
    """A slice's score where its evidence decides it: "not judged" without data, and a Pass that
    could still hide a material regression named as undecided rather than counted to 100."""
    if not sl.is_scored:
        return "not judged"
    if sl.fired or not sl.undecided:
        return f"{sl.score:g}"
    return "undecided: " + ", ".join(m.name for m in sl.undecided)


def slice_table(slices: Sequence[SliceResult]) -> Table:
    """Every slice's pairs, score (where its evidence decides it), disagreement (candidate / twin),
    fired and non-critical measures."""
    rows = []
    for sl in slices:
        by = {m.name: m for m in sl.metrics}
        dis = by.get("disagreement")
        rows.append((sl.key, sl.pairs, sl.judged, _score(sl),
                     "" if dis is None or dis.candidate_rate is None else f"{dis.candidate_rate:.1%} / {dis.twin_rate:.1%}",
                     ", ".join(m.name for m in sl.fired) or "—",
                     ", ".join(f"{m.name} {m.label}" for m in sl.metrics if m.label in ("High", "Low")) or "—"))
    return Table("slices (disagreement: candidate / twin)", ("slice", "pairs", "judged", "score", "disagreement",
                                                           "fired", "non-critical"), tuple(rows))
