"""What the live verdict keeps of a stored pair once it is measured: the request's facts (which
slices it counts in, which measures apply), its measures (`measures.measure`) and the session
and round it belongs to — a few hundred bytes of JSON in the store's measure cache
(`PairStore.cache_measures`), so that a `/verdict` measures only the pairs stored since the
last one, and a restarted proxy none.

The cache is only as good as the code that filled it, so it carries the measures' version: a
hash of the source of every gatekeeper module the measuring imports (from this one, to the
measures and what they call) and of jsonschema's version. A gatekeeper whose measures changed
finds another version and measures every pair again; a cache row that does not decode is
measured again. Only the live proxy's own store holds a cache: a store judged read-only is
never written.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.metadata
import json
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import gatekeeper
from gatekeeper.traffic.answers import Answer
from gatekeeper.traffic.judging import RequestFacts, facts_of
from gatekeeper.traffic.measures import Measures, Pair
from gatekeeper.traffic.pair_of import pair_of
from gatekeeper.live.sessions import round_of, session_of
from gatekeeper.traffic.format import TrafficRecord

FORMAT = 1  # of a cache row; part of the version
_NO_ANSWER = Answer()


@dataclass(frozen=True)
class Measured:
    """One stored pair as the analysis reads it: `pair` carries the request's facts only (its
    answers are not kept: they were measured), `measures` what they measured."""

    seq: int
    pair: Pair
    facts: RequestFacts
    measures: Measures
    session: str | None
    round: int


def measured_of(row: tuple[int, TrafficRecord, Answer, Answer, Answer | None],
                measure: Callable[[Pair], Measures]) -> Measured:
    """Measure one stored pair, a `PairStore.numbered_rows` row (as `pair_of.pairs` makes it for a
    judgement from scratch)."""
    seq, record, ref, cand, twin = row
    pair = pair_of(record, ref, cand, twin)
    facts = facts_of(pair)
    return Measured(seq, _slim(pair.id, facts), facts, measure(pair), session_of(record), round_of(record))


def encode(m: Measured) -> str:
    """A cache row's data."""
    f = m.facts
    return json.dumps({"id": m.pair.id, "facts": [f.tenant, f.kind, f.model_alias, f.sampled, f.wants_json,
                                                  f.has_tools, f.wants_logprobs],
                       "measures": {x.name: getattr(m.measures, x.name) for x in fields(Measures)},
                       "session": m.session, "round": m.round}, separators=(",", ":"))


def decode(seq: int, data: str) -> Measured | None:
    """A cache row as it was measured; None for a row that does not decode (measure it again)."""
    try:
        d = json.loads(data)
        facts = RequestFacts(*d["facts"])
        measures = Measures(**{x.name: _tuples(d["measures"][x.name]) for x in fields(Measures)})
        return Measured(seq, _slim(str(d["id"]), facts), facts, measures, d["session"], int(d["round"]))
    except (ValueError, TypeError, KeyError):
        return None


def _tuples(value: Any) -> Any:
    """JSON's lists back as the tuples they were (`bad`'s (candidate, twin) pairs...)."""
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    if isinstance(value, dict):
        return {k: _tuples(v) for k, v in value.items()}
    return value


def _slim(pair_id: str, f: RequestFacts) -> Pair:
    return Pair(id=pair_id, tenant=f.tenant, kind=f.kind, model_alias=f.model_alias, wants_json=f.wants_json, tools=None,
                candidate=_NO_ANSWER, reference=_NO_ANSWER, twin=None, sampled=f.sampled, wants_logprobs=f.wants_logprobs)


@functools.cache
def measures_version() -> str:
    """The measures' version: this module's source and every gatekeeper module it imports,
    transitively (imports inside functions too), hashed with jsonschema's version (and
    gatekeeper's, where no source is installed)."""
    h = hashlib.sha256(f"{FORMAT} jsonschema {importlib.metadata.version('jsonschema')}".encode())
    sources = _sources(__name__)
    for name, path in sorted(sources.items()):
        h.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    if __name__ not in sources:  # installed without sources: every release measures again
        h.update(f"gatekeeper {gatekeeper.__version__}".encode())
    return h.hexdigest()[:16]


def _sources(root: str) -> dict[str, Path]:
    """The source file of `root` and of every gatekeeper module it imports, transitively, with
    the packages they are in, found beside gatekeeper's own package (nothing is imported)."""
    package = Path(gatekeeper.__file__).parent
    seen: dict[str, Path] = {}
    todo = [root]
    while todo:
        name = todo.pop()
        parts = name.split(".")[1:]
        files = ([package.joinpath(*parts[:-1], parts[-1] + ".py")] if parts else []) + [package.joinpath(*parts, "__init__.py")]
        path = next((f for f in files if f.is_file()), None)
        if name in seen or path is None:  # `from module import Name`: a name, not a module
            continue
        seen[name] = path
        if "." in name:  # importing a module runs its package's __init__ too
            todo.append(name.rpartition(".")[0])
        for node in ast.walk(ast.parse(path.read_bytes())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("gatekeeper"):
                assert node.module is not None
                todo += [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                todo += [a.name for a in node.names if a.name.startswith("gatekeeper")]
    return seen
