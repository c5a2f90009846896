"""Golden cases by check name, and choosing them by glob: what gate 3 runs and what the plan
shows and checks (`--cases`, `--limit`, the policy's `golden.cases` and `golden.limit`).

A case's check name is its id, prefixed by its set's name when two loaded sets share the id
(`core.echo-ok`); a glob that matches no case is a ConfigError, never an empty selection."""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence

from gatekeeper.errors import ConfigError
from gatekeeper.golden.golden_set import GoldenCase, GoldenSet


def named_cases(sets: Sequence[GoldenSet]) -> list[tuple[str, GoldenCase]]:
    """Check names per case: the case id, prefixed by the set name when ids collide across sets."""
    ids = [c.id for s in sets for c in s.cases]
    return [(c.id if ids.count(c.id) == 1 else f"{s.name}.{c.id}", c) for s in sets for c in s.cases]


def select_cases(cases: list[tuple[str, GoldenCase]], globs: list[str], limit: int = 0) -> list[tuple[str, GoldenCase]]:
    """The cases whose check name matches one of `globs`, the first `limit` of them (0: all);
    ConfigError for a glob that matches none."""
    if cases:
        for glob in globs:
            if not any(fnmatch.fnmatchcase(name, glob) for name, _ in cases):
                raise ConfigError(f"{glob!r} matches no golden case")
    chosen = [(name, c) for name, c in cases if any(fnmatch.fnmatchcase(name, g) for g in globs)]
    return chosen[:limit] if limit else chosen
