"""Long sessions in live traffic, where they are visible: the session quality decay rate (SQDR,
docs/bug-classes.md#sqdr) of the candidate and of the twin, from the stored pairs.

A request belongs to a session when the proxy was told which header names it
(`--session-header`; the record carries the tag `session:<id>`). Its round is the number of user
messages it carries. Per round, the pass rate is the share of pairs whose answer agrees with the
reference's (the `disagreement` measure), for the candidate and for the twin; SQDR is
(rate at round 1 − rate at the last round) / rounds (`gates/longctx/decay.sqdr`), over the
rounds with at least `min_pairs` pairs. It is reported (and exported to `/metrics`) for alerts;
the verdict rests on the pair rules, and gate 4 judges session decay offline.
"""

from __future__ import annotations

from collections.abc import Iterable

from gatekeeper.json_types import JsonObject
from gatekeeper.stats.decay_rate import sqdr
from gatekeeper.traffic.measures import Measures, Pair, measure
from gatekeeper.traffic.format import TrafficRecord

TAG = "session:"


def session_of(record: TrafficRecord) -> str | None:
    """The session a record belongs to, when the proxy saw one."""
    return next((t[len(TAG):] for t in record.tags if t.startswith(TAG)), None)


def round_of(record: TrafficRecord) -> int:
    """A chat request's round: the user messages it carries (1 for a completion)."""
    msgs = record.request.get("messages") or []
    return max(1, sum(1 for m in msgs if isinstance(m, dict) and m.get("role") == "user"))


class SessionDecay:
    """SQDR's tallies, pair by pair (`add`, in stored order), read at any time (`result`): the
    live verdict keeps one and adds the pairs stored since its last look."""

    def __init__(self) -> None:
        self.rounds: dict[int, list[int]] = {}  # round -> [judged pairs, candidate passes, twin passes]
        self.sessions: set[str] = set()

    def add(self, session: str | None, round_: int, m: Measures) -> None:
        """One pair's measures; only judged pairs of a session count (a judged pair has a twin)."""
        if session is None or not m.judged:
            return
        self.sessions.add(session)
        cand_bad, twin_bad = m.bad["disagreement"]
        tally = self.rounds.setdefault(round_, [0, 0, 0])
        tally[0] += 1
        tally[1] += not cand_bad
        tally[2] += not twin_bad

    def result(self, min_pairs: int = 5) -> JsonObject | None:
        """SQDR per target over the rounds with at least `min_pairs` pairs; None when no stored
        request names a session."""
        if not self.sessions:
            return None
        rounds = sorted(r for r, (n, _, _) in self.rounds.items() if n >= min_pairs)
        rates = {target: [self.rounds[r][i] / self.rounds[r][0] for r in rounds] for i, target in ((1, "candidate"), (2, "twin"))}
        return {"sessions": len(self.sessions), "rounds": rounds, "pass_rate": rates,
                "sqdr": {target: round(sqdr(v), 5) if len(v) > 1 else None for target, v in rates.items()}}


def session_decay(rows: Iterable[tuple[TrafficRecord, Pair]], min_pairs: int = 5) -> JsonObject | None:
    """SQDR per target over the sessions' rounds; None when no stored request names a session."""
    tallies = SessionDecay()
    for record, pair in rows:
        sid = session_of(record)
        if sid is not None:
            tallies.add(sid, round_of(record), measure(pair))
    return tallies.result(min_pairs)
