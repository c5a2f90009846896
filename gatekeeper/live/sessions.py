"""Long sessions in live traffic, where they are visible: seed 000's session quality decay rate
(SQDR) of the candidate and of the twin, from the stored pairs.

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
from typing import Any

from gatekeeper.gates.longctx.decay import sqdr
from gatekeeper.gates.shadow.measures import Pair, measure
from gatekeeper.traffic.format import TrafficRecord

TAG = "session:"


def session_of(record: TrafficRecord) -> str | None:
    """The session a record belongs to, when the proxy saw one."""
    return next((t[len(TAG):] for t in record.tags if t.startswith(TAG)), None)


def round_of(record: TrafficRecord) -> int:
    """A chat request's round: the user messages it carries (1 for a completion)."""
    msgs = record.request.get("messages") or []
    return max(1, sum(1 for m in msgs if isinstance(m, dict) and m.get("role") == "user"))


def session_decay(rows: Iterable[tuple[TrafficRecord, Pair]], min_pairs: int = 5) -> dict[str, Any] | None:
    """SQDR per target over the sessions' rounds; None when no stored request names a session."""
    passes: dict[int, list[tuple[bool, bool | None]]] = {}
    sessions: set[str] = set()
    for record, pair in rows:
        sid = session_of(record)
        if sid is None:
            continue
        m = measure(pair)
        if not m.judged:
            continue
        sessions.add(sid)
        cand_bad, twin_bad = m.bad["disagreement"]
        passes.setdefault(round_of(record), []).append((not cand_bad, None if pair.twin is None else not twin_bad))
    if not sessions:
        return None
    rounds = sorted(r for r, v in passes.items() if len(v) >= min_pairs)
    rates = {"candidate": [sum(c for c, _ in passes[r]) / len(passes[r]) for r in rounds]}
    if all(t is not None for r in rounds for _, t in passes[r]):
        rates["twin"] = [sum(bool(t) for _, t in passes[r]) / len(passes[r]) for r in rounds]
    return {"sessions": len(sessions), "rounds": rounds, "pass_rate": rates,
            "sqdr": {target: round(sqdr(v), 5) if len(v) > 1 else None for target, v in rates.items()}}
