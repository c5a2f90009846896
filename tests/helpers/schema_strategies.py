"""Hypothesis strategies for JSON schemas within the grammar backend's supported subset: objects
of named properties (some required), strings, integers (optionally ranged), numbers, booleans,
enums, and arrays of those (bounded), nested.

`bounded_object_schemas` gives every string a `maxLength`: a grammar guarantees that the output is
always a prefix of a valid document, not that a tiny model sampling at temperature 0.8 ever
closes an unbounded string (1 of 80 such answers ran to 256 tokens inside one), so "every answer
is complete and valid" is claimed for bounded strings and "every finished answer is valid" for
the rest."""

from __future__ import annotations

from hypothesis import strategies as st

NAMES = ["city", "days", "unit", "count", "name", "tags", "price", "ok", "zone", "level", "items", "note"]
WORDS = ["red", "green", "blue", "north", "south", "small", "large", "yes", "no"]

_bounded_string = st.integers(1, 24).map(lambda n: {"type": "string", "maxLength": n})
_others = st.one_of(
    st.just({"type": "integer"}),
    st.tuples(st.integers(-50, 50), st.integers(0, 100)).map(lambda t: {"type": "integer", "minimum": t[0], "maximum": t[0] + t[1]}),
    st.just({"type": "number"}),
    st.just({"type": "boolean"}),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=4, unique=True).map(lambda ws: {"enum": ws}),
)
_leaf = st.one_of(st.just({"type": "string"}), _bounded_string, _others)
_bounded_leaf = st.one_of(_bounded_string, _others)


def _array(inner: st.SearchStrategy[dict]) -> st.SearchStrategy[dict]:
    return st.tuples(inner, st.integers(0, 3)).map(lambda t: {"type": "array", "items": t[0], "maxItems": t[1]})


def _object(inner: st.SearchStrategy[dict]) -> st.SearchStrategy[dict]:
    def build(props: dict[str, dict], required: list[bool]) -> dict:
        names = list(props)
        return {"type": "object", "properties": props, "required": [n for n, r in zip(names, required) if r]}
    return st.dictionaries(st.sampled_from(NAMES), inner, min_size=1, max_size=3).flatmap(
        lambda props: st.lists(st.booleans(), min_size=len(props), max_size=len(props)).map(lambda req: build(props, req)))


object_schemas = _object(st.recursive(_leaf, lambda inner: st.one_of(_array(inner), _object(inner)), max_leaves=6))
bounded_object_schemas = _object(st.recursive(_bounded_leaf, lambda inner: st.one_of(_array(inner), _object(inner)),
                                              max_leaves=6))
