"""A stored pair as a row, and back: the one encoding both pair stores (SQLite and PostgreSQL)
and the exported traffic files share.

A row holds the request as a traffic record (`TrafficRecord.to_json`) and the three answers as
`Answer.to_dict` holds them, each as JSON text (the twin may be absent: NULL). Reading a row
back checks every part (`stored_answer.answer_of_json`, `format.parse_record`): a row that is
not a valid pair is a ConfigError naming the store and the pair id, never a crash later in the
judging. Exported files are traffic files whose lines carry a `pair` key with the three answers
(docs/traffic-format.md); a line without one, or with a malformed one, is a ConfigError naming
file and line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from gatekeeper.errors import ConfigError
from gatekeeper.traffic.answers import Answer
from gatekeeper.traffic.format import TrafficLineError, TrafficRecord, iter_records, parse_record
from gatekeeper.traffic.stored_answer import answer_of_json, json_of_text

StoredPair = tuple[TrafficRecord, Answer, Answer, Answer | None]
"""(record, reference, candidate, twin): one stored pair, as the stores yield it."""

EncodedPair = tuple[str, str, str, str, str | None]
"""(id, record, reference, candidate, twin): a pair as the stores write it, JSON text."""


def encode(record: TrafficRecord, reference: Answer, candidate: Answer, twin: Answer | None) -> EncodedPair:
    """A pair as the JSON texts a row holds."""
    return (record.id, json.dumps(record.to_json()), json.dumps(reference.to_dict()), json.dumps(candidate.to_dict()),
            None if twin is None else json.dumps(twin.to_dict()))


def decode(store: str, line: int, pair_id: Any, record: Any, ref: Any, cand: Any, twin: Any) -> StoredPair:
    """A row back as a pair; `line` becomes the record's line (the row's position or seq). A row
    that is not a valid pair is a ConfigError naming `store` (its display name) and the pair id."""
    try:
        return (parse_record(json_of_text(record, "record"), line), answer_of_json(json_of_text(ref, "reference"), "reference"),
                answer_of_json(json_of_text(cand, "candidate"), "candidate"),
                None if twin is None else answer_of_json(json_of_text(twin, "twin"), "twin"))
    except ValueError as e:
        where = "record: " if isinstance(e, TrafficLineError) else ""
        raise ConfigError(f"pair {pair_id!r} is not a valid stored pair: {where}{e}", store) from None


def exported_line(record: TrafficRecord, ref: Answer, cand: Answer, twin: Answer | None) -> str:
    """One line of an exported traffic file: the record with its `pair` key."""
    pair = {"reference": ref.to_dict(), "candidate": cand.to_dict(), "twin": twin.to_dict() if twin else None}
    return json.dumps({**record.to_json(), "pair": pair})


def exported_pairs(path: str | Path) -> Iterator[StoredPair]:
    """The pairs of an exported traffic file; a ConfigError `file:line: pair...` for a bad one."""
    for record in iter_records(path):
        pair = record.pair
        if pair is None:
            raise ConfigError("no stored pair on this line (a `pair` key with `reference` and `candidate` answers; "
                              "`gatekeeper pairs export` writes them)", str(path), record.line, "pair")
        try:
            unknown = sorted(set(pair) - {"reference", "candidate", "twin"})
            if unknown:
                raise ValueError(f"unknown key {unknown[0]!r} (a pair holds reference, candidate and twin)")
            twin = pair.get("twin")
            yield (replace(record, pair=None), answer_of_json(pair["reference"], "reference"),
                   answer_of_json(pair["candidate"], "candidate"), None if twin is None else answer_of_json(twin, "twin"))
        except ValueError as e:
            raise ConfigError(str(e), str(path), record.line, "pair") from None
