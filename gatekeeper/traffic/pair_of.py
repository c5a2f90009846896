"""A traffic record and its answers as the pair gate 5 measures: the one conversion replayed and
stored pairs (the gate, the live verdict, `--shadow-store`) all go through."""

from __future__ import annotations

from collections.abc import Iterable

from gatekeeper.traffic.answers import Answer
from gatekeeper.traffic.measures import Pair, with_task
from gatekeeper.traffic.store.interface import PairStore
from gatekeeper.traffic.format import TrafficRecord


def wants_json(record: TrafficRecord) -> bool:
    """Whether the request asked for JSON (`response_format` json_object / json_schema)."""
    fmt = record.request.get("response_format")
    return isinstance(fmt, dict) and fmt.get("type") in ("json_object", "json_schema")


def pair_of(record: TrafficRecord, ref: Answer, cand: Answer, twin: Answer | None) -> Pair:
    """The pair gate 5 measures for one request and its answers (replayed or stored), with what
    its record says of the task (the json_schema's schema, the expected answer)."""
    req = record.request
    return with_task(Pair(id=record.id, tenant=record.tenant, kind=record.kind, model_alias=record.model_alias,
                          wants_json=wants_json(record), tools=tuple(req["tools"]) if req.get("tools") else None, candidate=cand,
                          reference=ref, twin=twin, sampled=record.sampled, wants_logprobs=bool(req.get("logprobs"))), record)


def pairs(store: PairStore) -> Iterable[Pair]:
    """Every stored pair as gate 5 measures it."""
    return (pair_of(*row) for row in store.rows())
