"""Matrix files (`matrices/*.yaml`): loading and validation.

    version: 1
    name: bundled
    axes:                                  # axis -> its values; the cells are every combination
      dtype: [float32, bfloat16]
      tp: [1, 2]
    exclude:                               # selectors (selector.py) removing cells
      - {dtype: float32, tp: 2}
    include:                               # extra cells, each giving every axis
      - {dtype: bfloat16, tp: 4}
    candidate: {target: bundled:optimized, opts: {dtype: "{dtype}", tp: "{tp}"}}   # candidate.py
    policy:                                # fragments merged over the run's policy, every matching rule in order
      - when: {tp: [2, 4]}
        gates: {golden: {cases: [canary-ok]}}
    expect:                                # expected verdicts (expect.py)
      - {verdict: PROMOTE}

The cells are the product of the axes in their order (the last axis varies fastest), less the
excluded ones, then the included ones. Each cell declares its axes as the candidate's execution
path: `dtype`, `quantization`, `kv_cache_dtype` and `tp` as themselves, any other axis as the label
`label.<axis>`. Everything is checked here, before any engine starts, and every error is a
ConfigError naming the file, the line and the key. docs/matrices.md is the full reference.
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gatekeeper.config.policy import policy_from_data
from gatekeeper.config.run_config import find_file
from gatekeeper.config.yaml_lines import LineDict, LineList, line_of, load_yaml
from gatekeeper.errors import ConfigError
from gatekeeper.gates.registry import settings_types
from gatekeeper.matrix.candidate import CandidateTemplate, parse_candidate
from gatekeeper.matrix.cell import VALUE_RE, Cell, Value, render
from gatekeeper.matrix.expect import VERDICTS, Expectation, expected, fault_names
from gatekeeper.matrix.selector import Selector, parse_selector
from gatekeeper.targets.interface import DECLARABLE
from gatekeeper.targets.spec import parse_declared, parse_target

TOP_KEYS = {"version", "name", "description", "axes", "include", "exclude", "candidate", "policy", "expect"}
RESERVED = {"cell": "the CI job matrix's own key", "port": "a launch placeholder", "model": "a launch placeholder",
            "api_key": "a launch placeholder"}
_AXIS = re.compile(r"^[a-z][a-z0-9_]*$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class Matrix:
    """A loaded matrix: where it came from (and the hash of its bytes, which a cell's run
    records), its axes with their values (rendered), its cells in order, and its expectations."""

    path: str
    sha256: str
    name: str
    description: str
    axes: tuple[tuple[str, tuple[str, ...]], ...]
    cells: tuple[Cell, ...]
    expectations: tuple[Expectation, ...] = ()

    def cell(self, cell_id: str) -> Cell:
        """The cell with this id; a ConfigError naming the nearest id otherwise."""
        for cell in self.cells:
            if cell.id == cell_id:
                return cell
        ids = [c.id for c in self.cells]
        near = difflib.get_close_matches(cell_id, ids, n=1, cutoff=0.5)
        hint = f"did you mean {near[0]}?" if near else f"`gatekeeper matrix plan {self.path}` lists its {len(ids)} cells"
        raise ConfigError(f"matrix {self.name} has no cell {cell_id!r}", self.path, key="cell", hint=hint)

    def expected(self, cell: Cell, faults: list[str] | tuple[str, ...]) -> str | None:
        """The verdict the matrix expects of a cell in a run with these candidate faults (None: no expectation)."""
        return expected(self.expectations, cell.values, faults)


def load_matrix(path: str | Path) -> Matrix:
    """Load and validate a matrix file (found like a policy: from the working directory, the
    project root, or the installed package's shipped files)."""
    found = find_file(str(path))
    p = str(found)
    data = load_yaml(found)
    if not isinstance(data, dict):
        raise ConfigError("a matrix must be a YAML mapping", p, line_of(data))
    for key in data:
        if key not in TOP_KEYS:
            raise ConfigError(f"unknown key (known: {', '.join(sorted(TOP_KEYS))})", p, line_of(data, key), str(key))
    if data.get("version", 1) != 1:
        raise ConfigError("unsupported matrix version (this gatekeeper reads version 1)", p, line_of(data, "version"), "version")
    name = data.get("name", found.stem)
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError("must be a name of letters, digits and _ . - (it names the matrix's output directory)", p,
                          line_of(data, "name"), "name")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise ConfigError("must be a string", p, line_of(data, "description"), "description")
    axes = _axes(data, p)
    includes = _includes(data.get("include"), p, line_of(data, "include"), axes)
    known = {a: [render(v) for v in values] for a, values in axes.items()}
    for values, _ in includes:
        for a, v in values.items():
            if render(v) not in known[a]:
                known[a].append(render(v))
    excludes = _selectors(data.get("exclude"), "exclude", p, line_of(data, "exclude"), known)
    if "candidate" not in data:
        raise ConfigError("a matrix needs a candidate template (`target: bundled:optimized` with `opts`, or `launch`)",
                          p, line_of(data), "candidate")
    template = parse_candidate(data["candidate"], p, line_of(data, "candidate"), known)
    rules = _policy_rules(data.get("policy"), p, line_of(data, "policy"), known)
    combos = [(dict(zip(axes, combo)), line_of(data, "axes")) for combo in itertools.product(*axes.values())]
    kept = [(values, line) for values, line in combos if not any(s.matches(_rendered(values)) for s in excludes)]
    if not kept and not includes:
        raise ConfigError("excludes every cell: nothing is left to run", p, line_of(data, "exclude"), "exclude")
    cells: dict[str, Cell] = {}
    origin: dict[str, str] = {}
    for values, line in kept:
        cell = _cell(values, line, template, rules, p, line_of(data, "candidate"))
        cells[cell.id], origin[cell.id] = cell, "the axes give it"
    for i, (values, line) in enumerate(includes):  # only an include can repeat a cell: axis values are distinct
        cell = _cell(values, line, template, rules, p, line_of(data, "candidate"))
        if cell.id in cells:
            raise ConfigError(f"duplicate cell {cell.id} ({origin[cell.id]})", p, line, f"include[{i}]")
        cells[cell.id], origin[cell.id] = cell, f"include[{i}] at line {line} gives it"
    expectations = _expectations(data.get("expect"), p, line_of(data, "expect"), known)
    return Matrix(p, hashlib.sha256(found.read_bytes()).hexdigest(), name, description,
                  tuple((a, tuple(known[a])) for a in axes), tuple(cells.values()), expectations)


def _rendered(values: dict[str, Value]) -> dict[str, str]:
    return {a: render(v) for a, v in values.items()}


def _axes(data: dict, p: str) -> dict[str, list[Value]]:
    """The axes in order, each a non-empty list of distinct plain values that can be declared."""
    raw = data.get("axes")
    if not isinstance(raw, dict) or not raw:
        raise ConfigError("must be a non-empty mapping of axis -> list of values", p, line_of(data, "axes") or line_of(data),
                          "axes")
    out: dict[str, list[Value]] = {}
    for axis, values in raw.items():
        at, where = line_of(raw, axis), f"axes.{axis}"
        if not isinstance(axis, str) or not _AXIS.match(axis):
            raise ConfigError("an axis name is lower-case letters, digits and _, starting with a letter", p, at, where)
        if axis in RESERVED:
            raise ConfigError(f"{axis!r} cannot be an axis ({RESERVED[axis]})", p, at, where)
        if not isinstance(values, list) or not values:
            raise ConfigError("must be a non-empty list of values", p, at, where)
        seen: set[str] = set()
        for i, value in enumerate(values):
            vline = values.item_lines[i] if isinstance(values, LineList) else at
            _check_value(axis, value, p, vline, f"{where}[{i}]")
            if render(value) in seen:
                raise ConfigError(f"{render(value)!r} is listed twice", p, vline, f"{where}[{i}]")
            seen.add(render(value))
        out[axis] = list(values)
    return out


def _check_value(axis: str, value: Any, p: str, line: int | None, where: str) -> None:
    """A plain value that reads well in a cell id and declares as the candidate's path."""
    if isinstance(value, (dict, list)) or value is None or not isinstance(value, (str, int, float, bool)):
        raise ConfigError("must be a plain value (a string, number or on/off)", p, line, where)
    if not VALUE_RE.match(render(value)):
        raise ConfigError(f"{render(value)!r}: a value is letters, digits and _ . + - (it is part of the cell id)", p, line,
                          where)
    try:
        parse_declared({_declared_key(axis): render(value)}, "declare")
    except ConfigError as e:
        raise ConfigError(f"{e.message}; an axis is declared as the candidate's execution path", p, line, where) from None


def _declared_key(axis: str) -> str:
    return axis if axis in DECLARABLE else f"label.{axis}"


def _includes(raw: Any, p: str, line: int | None, axes: dict[str, list[Value]]) -> list[tuple[dict[str, Value], int | None]]:
    """The extra cells: each a mapping giving every axis (and nothing else)."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ConfigError("must be a list of cells (mappings of every axis -> value)", p, line, "include")
    out = []
    for i, item in enumerate(raw):
        at, where = line_of(item) or line, f"include[{i}]"
        if not isinstance(item, dict):
            raise ConfigError("must be a mapping of every axis -> value", p, at, where)
        for axis in item:
            if axis not in axes:
                raise ConfigError(f"no such axis (axes: {', '.join(axes)})", p, line_of(item, axis), f"{where}.{axis}")
            _check_value(str(axis), item[axis], p, line_of(item, axis), f"{where}.{axis}")
        missing = [a for a in axes if a not in item]
        if missing:
            raise ConfigError(f"gives no value for {', '.join(missing)} (an included cell gives every axis)", p, at, where)
        out.append(({a: item[a] for a in axes}, at))
    return out


def _selectors(raw: Any, where: str, p: str, line: int | None, known: dict[str, list[str]]) -> list[Selector]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ConfigError("must be a list of mappings of axis -> value(s)", p, line, where)
    return [parse_selector(item, f"{where}[{i}]", p, line_of(item) or line, known) for i, item in enumerate(raw)]


def _cell(values: dict[str, Value], line: int | None, template: CandidateTemplate, rules: list[tuple[Selector, dict]],
          p: str, candidate_line: int | None) -> Cell:
    """One cell: its target filled in and checked as a run config's target would be, its
    declared path, and its policy fragments merged."""
    rendered = _rendered(values)
    target = template.target(template.texts(values))
    try:
        parse_target(target, "candidate")
        if target["kind"] == "launch":
            target["command"].format(port=0, model="m", api_key="k")
    except ConfigError as e:
        raise ConfigError(f"cell {','.join(f'{a}={v}' for a, v in rendered.items())}: {e.message}", p, candidate_line,
                          e.key or "candidate") from None
    except (ValueError, KeyError, IndexError) as e:
        raise ConfigError(f"the filled command is not a valid template: {e}", p, candidate_line, "candidate.launch") from None
    declared = parse_declared({_declared_key(a): v for a, v in rendered.items()}, "declare")
    fragment: dict[str, Any] | None = None
    for selector, rule in rules:
        if selector.matches(rendered):
            fragment = merge_fragments(fragment or {}, rule)
    return Cell(tuple(rendered.items()), target, tuple(declared.items()), fragment, line)


def _policy_rules(raw: Any, p: str, line: int | None, known: dict[str, list[str]]) -> list[tuple[Selector, dict]]:
    """Policy fragments with the cells they apply to; each fragment is checked as a policy is."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ConfigError("must be a list of {when: {axis: value}, gates: ..., checks: ...}", p, line, "policy")
    out = []
    for i, item in enumerate(raw):
        at, where = line_of(item) or line, f"policy[{i}]"
        if not isinstance(item, dict):
            raise ConfigError("must be a mapping: when (optional), gates and/or checks", p, at, where)
        for key in item:
            if key not in ("when", "gates", "checks"):
                raise ConfigError("unknown key (known: when, gates, checks)", p, line_of(item, key), f"{where}.{key}")
        if "gates" not in item and "checks" not in item:
            raise ConfigError("sets nothing: give gates and/or checks", p, at, where)
        selector = parse_selector(item["when"], f"{where}.when", p, line_of(item, "when"), known) if "when" in item \
            else Selector()
        fragment = LineDict({k: item[k] for k in ("gates", "checks") if k in item})  # a policy, for policy_from_data
        fragment.line = at
        fragment.key_lines = {k: n for k in fragment if (n := line_of(item, k)) is not None}
        try:
            policy_from_data(fragment, p, settings_types())
        except ConfigError as e:
            raise ConfigError(e.message, p, e.line, f"{where}.{e.key}" if e.key else where) from None
        out.append((selector, plain(fragment)))
    return out


def _expectations(raw: Any, p: str, line: int | None, known: dict[str, list[str]]) -> tuple[Expectation, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ConfigError("must be a list of {verdict, when (optional), faults (optional)}", p, line, "expect")
    out = []
    for i, item in enumerate(raw):
        at, where = line_of(item) or line, f"expect[{i}]"
        if not isinstance(item, dict):
            raise ConfigError("must be a mapping: verdict, when (optional), faults (optional)", p, at, where)
        for key in item:
            if key not in ("verdict", "when", "faults"):
                raise ConfigError("unknown key (known: verdict, when, faults)", p, line_of(item, key), f"{where}.{key}")
        verdict = item.get("verdict")
        if not isinstance(verdict, str) or verdict.upper() not in VERDICTS:
            raise ConfigError(f"must be one of {', '.join(VERDICTS)}", p, line_of(item, "verdict") or at, f"{where}.verdict")
        selector = parse_selector(item["when"], f"{where}.when", p, line_of(item, "when"), known) if "when" in item \
            else Selector()
        faults = item.get("faults")
        if faults is not None and not (isinstance(faults, list) and all(isinstance(f, str) and f for f in faults)):
            raise ConfigError("must be a list of fault names ([] for a run without faults)", p, line_of(item, "faults"),
                              f"{where}.faults")
        out.append(Expectation(verdict.upper(), selector, None if faults is None else fault_names(faults), at))
    return tuple(out)


def plain(obj: Any) -> Any:
    """Parsed YAML as plain dicts and lists (what yaml.safe_dump and json take)."""
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [plain(v) for v in obj]
    return obj


def merge_fragments(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """A policy (or fragment) with `over` merged in: each gate's settings key by key (`over`
    wins; lists are replaced, not extended), `over`'s blocking rules before `base`'s (the first
    matching rule wins, so they take precedence), anything else replaced."""
    out = dict(base)
    for key, value in over.items():
        if key == "gates" and isinstance(out.get("gates"), dict) and isinstance(value, dict):
            gates = dict(out["gates"])
            for gate, section in value.items():
                gates[gate] = {**(gates.get(gate) or {}), **(section or {})}
            out["gates"] = gates
        elif key == "checks":
            out["checks"] = [*(value or []), *(out.get("checks") or [])]
        else:
            out[key] = value
    return out
